package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/termtext"
)

// FoldedValue is what WriteFolded writes for each stack.
type FoldedValue int

const (
	// FoldedSamples counts the stack's samples, as stackcollapse-perf.pl
	// does.
	FoldedSamples FoldedValue = iota
	// FoldedPeriods sums their periods: the event count they stand for
	// (nanoseconds, for cpu-clock).
	FoldedPeriods
)

// foldedName keeps names from breaking the format: flame-graph tools
// split frames on ';' and the count off at the last space.
var foldedName = strings.NewReplacer(";", ":", " ", "_")

// WriteFolded writes the samples of one event of p as folded stacks,
// "comm;root;...;leaf value" per line, sorted, for flame-graph tools
// (the format of Brendan Gregg's stackcollapse scripts). Frames no symbol
// names are [unknown], as in stackcollapse-perf.pl.
func WriteFolded(w io.Writer, p *profile.Profile, event int, value FoldedValue) error {
	sums := map[string]uint64{}
	var stack []int32
	var sb strings.Builder
	for _, e := range p.Entries {
		if int(e.Event) != event {
			continue
		}
		stack = p.Stack(stack[:0], e.Stack)
		sb.Reset()
		sb.WriteString(termtext.Escape(p.Strings[p.Threads[e.Thread].Comm]))
		for i := len(stack) - 1; i >= 0; i-- {
			sb.WriteByte(';')
			if f := p.FuncOf(stack[i]); f.Unresolved {
				sb.WriteString("[unknown]")
			} else {
				sb.WriteString(foldedName.Replace(termtext.Escape(f.Name)))
			}
		}
		if value == FoldedPeriods {
			sums[sb.String()] += e.Period
		} else {
			sums[sb.String()] += e.Count
		}
	}
	keys := make([]string, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, err := fmt.Fprintf(w, "%s %d\n", k, sums[k]); err != nil {
			return err
		}
	}
	return nil
}
