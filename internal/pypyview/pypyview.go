package pypyview

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/jitprof/jitprof/internal/codemap"
	"github.com/jitprof/jitprof/internal/pypylog"
	"github.com/jitprof/jitprof/internal/termtext"
)

// Sample is one sample of a PyPy process: its time on CLOCK_MONOTONIC
// (the recording's) and the sampled address.
type Sample struct {
	Time, IP uint64
}

// View is the loop view: the hot loops and bridges of one log.
type View struct {
	// Samples is the process's samples, InCode those in its loops and
	// bridges; Percent of every entry is of Samples.
	Samples uint64 `json:"samples"`
	InCode  uint64 `json:"in_code"`
	// Timeless says that the log's times could not be put on the
	// samples' clock: code re-generated at an address is then charged
	// to the last that was there.
	Timeless bool     `json:"timeless"`
	Loops    []*Entry `json:"loops"` // hot loops, by samples, each with its hot bridges
	// Hidden counts the samples of loops and bridges under MinPercent.
	Hidden uint64 `json:"hidden_samples"`
}

// Entry is one loop or bridge.
type Entry struct {
	Name    string  `json:"name"` // as reports name it: "f [loop 3]", "f [bridge 1 of loop 3]"
	Bridge  bool    `json:"bridge"`
	Loop    int     `json:"loop,omitempty"`  // a loop's number
	Guard   uint64  `json:"guard,omitempty"` // the guard a bridge leaves
	Leaves  string  `json:"leaves,omitempty"`
	Start   uint64  `json:"start"`
	End     uint64  `json:"end"`
	Samples uint64  `json:"samples"`
	Percent float64 `json:"percent"`
	// Source is where the code comes from: a loop's position, or for a
	// bridge the position of the guard it leaves.
	Source  string   `json:"source,omitempty"`
	Kind    string   `json:"kind,omitempty"` // the trace's header: "loop", "entry bridge", "bridge"
	Inputs  string   `json:"inputs,omitempty"`
	Ops     []Op     `json:"ops,omitempty"`
	Bridges []*Entry `json:"bridges,omitempty"`

	code int
}

// Op is one operation of an entry's optimised trace.
type Op struct {
	// Offset is the +OFF of the operation's machine code from the code's
	// block, -1 for operations that generated none.
	Offset int32  `json:"offset"`
	Text   string `json:"text"`
	// Source is the merge point the operation follows, set on the first
	// operation after each merge point.
	Source  string  `json:"source,omitempty"`
	Samples uint64  `json:"samples"`
	Percent float64 `json:"percent"` // of the entry's samples
}

// Options choose what Build keeps.
type Options struct {
	// Clock puts the log's TSC stamps on the samples' clock; nil makes
	// the view timeless.
	Clock *pypylog.Clock
	// MinPercent hides loops and bridges with a smaller share.
	MinPercent float64
}

// Build charges samples, all of one process, to the loops and bridges of
// l (read with pypylog.Options.Ops, for the traces' text): to the code
// live at the sample's address and time, and within it to the operation
// whose machine code holds the address.
func Build(l *pypylog.Log, samples []Sample, opts Options) (*View, error) {
	v := &View{Samples: uint64(len(samples)), Timeless: opts.Clock == nil}
	b := codemap.NewBuilder()
	for i, c := range l.Codes {
		var t uint64
		if opts.Clock != nil {
			t = opts.Clock.Nanos(c.Time)
		}
		if err := b.Load(t, c.Start, c.End-c.Start, "", uint64(i)+1, i); err != nil {
			return nil, fmt.Errorf("line %d: %w", c.Line, err)
		}
	}
	m := b.Build()
	counts := make([]uint64, len(l.Codes))
	offs := make([][]int64, len(l.Codes)) // sampled offsets from each code's block
	for _, s := range samples {
		t := s.Time
		if opts.Clock == nil {
			t = 0
		}
		e, ok := m.Lookup(s.IP, t)
		if !ok {
			continue
		}
		i := e.Payload.(int)
		counts[i]++
		offs[i] = append(offs[i], int64(s.IP-l.Codes[i].Block))
		v.InCode++
	}
	names := l.Names()
	entries := map[int]*Entry{}
	for i, n := range counts {
		if n == 0 {
			continue
		}
		pc := 100 * float64(n) / float64(v.Samples)
		if pc < opts.MinPercent {
			v.Hidden += n
			continue
		}
		entries[i] = entry(l, names, i, n, pc, offs[i])
	}
	// Bridges under their loop; a bridge whose loop the log does not
	// say (no jit-log-opt) is listed as a loop of its own.
	for i, e := range entries {
		if root, ok := l.Root(i); ok && root != i && l.Codes[i].Bridge {
			parent := entries[root]
			if parent == nil {
				parent = entry(l, names, root, 0, 0, nil)
				entries[root] = parent
				v.Loops = append(v.Loops, parent)
			}
			parent.Bridges = append(parent.Bridges, e)
			continue
		}
		if !containsEntry(v.Loops, e) {
			v.Loops = append(v.Loops, e)
		}
	}
	byShare := func(es []*Entry) {
		sort.Slice(es, func(a, b int) bool {
			if es[a].Samples != es[b].Samples {
				return es[a].Samples > es[b].Samples
			}
			return es[a].code < es[b].code
		})
	}
	byShare(v.Loops)
	for _, e := range v.Loops {
		byShare(e.Bridges)
	}
	return v, nil
}

func containsEntry(es []*Entry, e *Entry) bool {
	for _, x := range es {
		if x == e {
			return true
		}
	}
	return false
}

// entry describes code i with n samples (pc per cent), at offsets offs.
func entry(l *pypylog.Log, names []string, i int, n uint64, pc float64, offs []int64) *Entry {
	c := &l.Codes[i]
	e := &Entry{Name: names[i], Bridge: c.Bridge, Start: c.Start, End: c.End, Samples: n, Percent: pc, code: i}
	if c.Bridge {
		e.Guard = c.Guard
		if c.Parent >= 0 {
			parent := &l.Traces[c.Parent]
			if parent.Code >= 0 {
				e.Leaves = names[parent.Code]
			}
			for _, op := range parent.Ops {
				if op.Guard == c.Guard && op.Point >= 0 {
					e.Source = position(l.Locations[parent.Points[op.Point].Loc])
					break
				}
			}
		}
	} else {
		e.Loop = c.Loop
		e.Source = position(c.Loc)
	}
	if c.Trace < 0 {
		return e
	}
	tr := &l.Traces[c.Trace]
	e.Kind, e.Inputs = tr.Kind, tr.Inputs
	e.Ops = make([]Op, len(tr.Ops))
	last := int32(-1)
	for j, op := range tr.Ops {
		e.Ops[j].Offset = op.Offset
		if j < len(tr.Text) {
			e.Ops[j].Text = tr.Text[j]
		}
		if op.Point >= 0 && op.Point != last && int(op.Point) < len(tr.Points) {
			e.Ops[j].Source = l.Locations[tr.Points[op.Point].Loc].String()
			last = op.Point
		}
	}
	// Each sampled offset goes to the last operation starting at or
	// before it: the operations are logged in code order.
	var starts []int // indexes of operations with machine code
	for j, op := range tr.Ops {
		if op.Offset >= 0 && (len(starts) == 0 || op.Offset >= tr.Ops[starts[len(starts)-1]].Offset) {
			starts = append(starts, j)
		}
	}
	for _, off := range offs {
		k := sort.Search(len(starts), func(k int) bool { return int64(tr.Ops[starts[k]].Offset) > off })
		if k > 0 {
			e.Ops[starts[k-1]].Samples++
		}
	}
	for j := range e.Ops {
		if n > 0 {
			e.Ops[j].Percent = 100 * float64(e.Ops[j].Samples) / float64(n)
		}
	}
	return e
}

// position is "file:line" of a location, or its raw text.
func position(l pypylog.Location) string {
	if l.File == "" {
		return l.Func
	}
	return fmt.Sprintf("%s:%d", l.File, l.Line)
}

// WriteJSON writes v as JSON.
func WriteJSON(w io.Writer, v *View) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteText writes v as a table, each loop's bridges under it; with
// traces, each entry's optimised trace follows it, its operations with
// their share of the entry's samples.
func WriteText(w io.Writer, v *View, traces bool) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%9s %8s  %s\n", "Samples", "Percent", "Loop or bridge")
	var write func(e *Entry, depth int)
	write = func(e *Entry, depth int) {
		indent := strings.Repeat("  ", depth)
		// Every name and trace is PyPy's log's: escaped for the terminal.
		where := termtext.Escape(e.Source)
		if e.Bridge && e.Leaves != "" {
			where = fmt.Sprintf("%s, out of guard %#x of %s", where, e.Guard, termtext.Escape(e.Leaves))
		}
		fmt.Fprintf(&sb, "%9d %7.2f%%  %s%s  %s  %#x-%#x\n", e.Samples, e.Percent, indent, termtext.Escape(e.Name), where, e.Start, e.End)
		if traces && len(e.Ops) > 0 {
			fmt.Fprintf(&sb, "%19s%s    %s %s\n", "", indent, termtext.Escape(e.Kind), termtext.Escape(e.Inputs))
			for _, op := range e.Ops {
				if op.Source != "" {
					fmt.Fprintf(&sb, "%19s%s    # %s\n", "", indent, termtext.Escape(op.Source))
				}
				pc := ""
				if op.Samples > 0 {
					pc = fmt.Sprintf("%6.2f%%", op.Percent)
				}
				off := "      "
				if op.Offset >= 0 {
					off = fmt.Sprintf("+%d:", op.Offset)
				}
				fmt.Fprintf(&sb, "%17s  %s    %-7s %s\n", pc, indent, off, termtext.Escape(op.Text))
			}
		}
		for _, br := range e.Bridges {
			write(br, depth+1)
		}
	}
	for _, e := range v.Loops {
		write(e, 0)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}
