package report

import (
	"errors"
	"path/filepath"
	"slices"

	"github.com/jitprof/jitprof/internal/profile"
)

// Filter keeps the samples of the given commands, processes, threads,
// leaf images and CPUs, as perf report's --comms, --pid, --tid, --dsos
// and --cpu do; an empty list keeps all.
//
// perf leaves out the samples of other CPUs before it totals them, so
// with --cpu its percentages are of those CPUs' samples; the other
// filters hide rows after the totals, which stay of all samples (perf's
// --percentage absolute, its default). Apply does the same. perf decides
// whether a row is hidden by the first sample it puts in the row, so
// where the sort keys do not hold what a filter looks at (--comms
// without comm, --dsos without dso, --pid or --tid without pid) its rows
// can hold samples the filter does not keep, or be hidden with samples
// it does; Apply filters sample by sample, and agrees with perf's rows
// whenever the keys hold what is filtered.
type Filter struct {
	Comms      []string
	PIDs, TIDs []uint32
	DSOs       []string // a path, or a base name
	CPUs       []int
}

// ErrNoCPU is returned by Apply for a CPU filter on a recording whose
// samples carry no CPU.
var ErrNoCPU = errors.New("the recording's samples carry no CPU (record with -a, -C or --sample-cpu)")

// Apply drops the samples f does not keep from p, and those of other
// CPUs from p's event totals as well.
func (f *Filter) Apply(p *profile.Profile) error {
	if len(f.Comms)+len(f.PIDs)+len(f.TIDs)+len(f.DSOs)+len(f.CPUs) == 0 {
		return nil
	}
	if len(f.CPUs) > 0 && len(p.Entries) > 0 && !slices.ContainsFunc(p.Entries, func(e profile.Entry) bool { return e.CPU >= 0 }) {
		return ErrNoCPU
	}
	kept := p.Entries[:0]
	for _, e := range p.Entries {
		if len(f.CPUs) > 0 && !slices.Contains(f.CPUs, int(e.CPU)) {
			if int(e.Event) < len(p.Events) {
				p.Events[e.Event].Count -= e.Count
				p.Events[e.Event].Total -= e.Period
			}
			continue
		}
		if f.keep(p, &e) {
			kept = append(kept, e)
		}
	}
	p.Entries = kept
	return nil
}

// keep reports whether f keeps the samples of e by their thread and
// leaf image.
func (f *Filter) keep(p *profile.Profile, e *profile.Entry) bool {
	th := &p.Threads[e.Thread]
	if len(f.Comms) > 0 && !slices.Contains(f.Comms, p.Strings[th.Comm]) ||
		len(f.PIDs) > 0 && !slices.Contains(f.PIDs, th.PID) ||
		len(f.TIDs) > 0 && !slices.Contains(f.TIDs, th.TID) {
		return false
	}
	if len(f.DSOs) == 0 {
		return true
	}
	if e.Stack < 0 {
		return false
	}
	im := &p.Images[p.FuncOf(p.Nodes[e.Stack].Frame).Image]
	if im.Kind == profile.ImageUnknown {
		return false // perf's samples in no mapping have no image to match
	}
	return slices.ContainsFunc(f.DSOs, func(d string) bool { return d == im.Name || d == filepath.Base(im.Name) })
}
