package report

import (
	"fmt"

	"github.com/jitprof/jitprof/internal/profile"
)

// Excluded is what ExcludeAnon left out of a profile.
type Excluded struct {
	Samples, Period uint64 // of the first event, the one reports lead with
	TotalPeriod     uint64
}

// ExcludeAnon drops the entries whose sampled address (the leaf of the
// stack) is in anonymous executable memory, as opreport does without
// --anon-samples (seed 000: "Default is to not include anonymous samples
// in reports"), and says how much that was so the report can tell the
// user. Event totals shrink with it, so percentages stay of what is shown.
// Arcs (Profile.Arcs) with an end in such memory go too.
func ExcludeAnon(p *profile.Profile) Excluded {
	var ex Excluded
	if len(p.Events) > 0 {
		ex.TotalPeriod = p.Events[0].Total
	}
	kept := p.Entries[:0]
	for _, e := range p.Entries {
		if !leafIsAnon(p, e.Stack) {
			kept = append(kept, e)
			continue
		}
		if e.Event == 0 {
			ex.Samples += e.Count
			ex.Period += e.Period
		}
		if int(e.Event) < len(p.Events) {
			p.Events[e.Event].Count -= e.Count
			p.Events[e.Event].Total -= e.Period
		}
	}
	p.Entries = kept
	excludeAnonArcs(p)
	return ex
}

func leafIsAnon(p *profile.Profile, node int32) bool {
	if node < 0 || int(node) >= len(p.Nodes) {
		return false
	}
	f := p.FuncOf(p.Nodes[node].Frame)
	return f != nil && int(f.Image) < len(p.Images) && p.Images[f.Image].Kind == profile.ImageAnon
}

// Note says what was left out, for a report whose first event has kept
// samples left, and the flag that includes them; "" when nothing was.
func (ex Excluded) Note(kept uint64) string {
	if ex.Samples == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d samples (%.2f%% of the event) are in JIT code (anonymous executable memory) and left out, so percentages are of the rest: add --anon-samples to include and name them",
		ex.Samples, ex.Samples+kept, 100*float64(ex.Period)/float64(max(ex.TotalPeriod, 1)))
}
