package driver

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/anonbind"
)

// maxListed bounds the ambiguous ranges and pids listed per message
// without -v.
const maxListed = 3

// TellClaims says, per process with JIT samples, which handler named
// them from what data, what went wrong on the way, and where a timeless
// source could not tell re-generated code apart. Processes that merely
// have no JIT data, common in a system-wide recording, get one line in
// all unless verbose.
func TellClaims(w io.Writer, cmd string, claims []anonbind.Claim, verbose bool) {
	say := func(format string, args ...any) { fmt.Fprintf(w, "jitprof "+cmd+": "+format+"\n", args...) }
	var noData []anonbind.Claim
	notAsked := map[string][]uint32{} // "handler\x00why" -> pids
	var notAskedKeys []string
	for _, c := range claims {
		var shown []error // errors worth a line of their own
		for _, err := range c.Errs {
			var ce *anon.ClaimError
			switch {
			case errors.Is(err, anon.ErrNoData) && !verbose:
			case errors.Is(err, anon.ErrNotAsked) && errors.As(err, &ce) && !verbose:
				_, why, _ := strings.Cut(ce.Err.Error(), anon.ErrNotAsked.Error()+": ")
				k := ce.Handler + "\x00" + why
				if _, ok := notAsked[k]; !ok {
					notAskedKeys = append(notAskedKeys, k)
				}
				notAsked[k] = append(notAsked[k], c.PID)
			default:
				shown = append(shown, err)
			}
		}
		who := fmt.Sprintf("pid %d (%s)", c.PID, c.Comm)
		switch {
		case c.Handler != "" && c.ResolveErr != nil:
			say("%s: anon handler %s took its JIT code but failed while naming it (named %d of %d addresses; the rest stay in anon buckets): %v",
				who, c.Handler, c.Named, c.Asked, c.ResolveErr)
		case c.Handler != "":
			say("%s: JIT code named by %s from %s", who, c.Handler, c.Source)
		case len(shown) == 0 && !verbose:
			noData = append(noData, c)
		default:
			say("%s: no anon handler named its JIT code; its samples stay in anon buckets", who)
		}
		for _, err := range shown {
			fmt.Fprintf(w, "  %v\n", err)
		}
		for i, amb := range c.Ambiguous {
			if i == maxListed && !verbose {
				say("pid %d: and %d more ambiguous ranges (-v lists them)", c.PID, len(c.Ambiguous)-maxListed)
				break
			}
			say("pid %d: the %s data is ambiguous for %#x-%#x: %s all ran there and it has no times to tell them apart (a jitdump or jitlog can)",
				c.PID, c.Handler, amb.Start, amb.End, strings.Join(amb.Names, ", "))
		}
	}
	for _, k := range notAskedKeys {
		handler, why, _ := strings.Cut(k, "\x00")
		say("anon handler %s was not asked about %s: %s", handler, pidList(notAsked[k]), why)
	}
	switch {
	case len(noData) == 1:
		c := noData[0]
		say("pid %d (%s) has samples in anonymous memory but no JIT data an anon handler reads; they stay in anon buckets (-v says where each looked)", c.PID, c.Comm)
	case len(noData) > 1:
		pids := make([]uint32, len(noData))
		for i, c := range noData {
			pids[i] = c.PID
		}
		say("%d processes have samples in anonymous memory but no JIT data an anon handler reads (%s); they stay in anon buckets (-v lists them and where each handler looked)",
			len(noData), pidList(pids))
	}
}

// pidList is "pid 7" or "pids 7, 8, 9 and 4 more".
func pidList(pids []uint32) string {
	if len(pids) == 1 {
		return "pid " + strconv.FormatUint(uint64(pids[0]), 10)
	}
	var b strings.Builder
	b.WriteString("pids ")
	for i, pid := range pids {
		if i == maxListed && len(pids) > maxListed+1 {
			fmt.Fprintf(&b, " and %d more", len(pids)-maxListed)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatUint(uint64(pid), 10))
	}
	return b.String()
}
