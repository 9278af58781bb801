package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	pprof "github.com/google/pprof/profile"

	"github.com/jitprof/jitprof/internal/profile"
)

// Pprof converts the samples of one event of p into a pprof profile
// (github.com/google/pprof/proto/profile.proto), with a mapping per image
// (build-id included), a function per Func and, when the profile has
// them, source lines. Its locations are p's frames and its functions p's
// functions: their IDs are their indices plus one.
func Pprof(p *profile.Profile, event int) (*pprof.Profile, error) {
	if event < 0 || event >= len(p.Events) {
		return nil, fmt.Errorf("profile: no event %d", event)
	}
	ev := p.Events[event]
	unit := "events"
	if strings.HasPrefix(ev.Name, "cpu-clock") || strings.HasPrefix(ev.Name, "task-clock") {
		unit = "nanoseconds" // the clock events count time
	}
	// No TimeNanos: sample times are CLOCK_MONOTONIC, not wall time.
	out := &pprof.Profile{
		SampleType: []*pprof.ValueType{{Type: "samples", Unit: "count"}, {Type: ev.Name, Unit: unit}},
		PeriodType: &pprof.ValueType{Type: ev.Name, Unit: unit},
		Period:     int64(ev.Period),
	}
	if p.EndNS > p.StartNS {
		out.DurationNanos = int64(p.EndNS - p.StartNS)
	}
	if len(p.Cmdline) > 0 {
		out.Comments = []string{strings.Join(p.Cmdline, " ")}
	}
	// pprof takes the first mapping for the program (go tool pprof's
	// "File:"), so the program's image leads; the rest keep their order.
	order := make([]int, 0, len(p.Images))
	main := mainImage(p, event)
	if main >= 0 {
		order = append(order, main)
	}
	for i := range p.Images {
		if i != main {
			order = append(order, i)
		}
	}
	maps := make([]*pprof.Mapping, len(p.Images))
	for _, i := range order {
		im := p.Images[i]
		m := &pprof.Mapping{
			ID: uint64(len(out.Mapping) + 1), Start: im.Start, Limit: im.Limit, Offset: im.Offset,
			File: im.Name, BuildID: im.BuildID,
			HasFunctions: im.NoSymbols == "" && im.Kind != profile.ImageUnknown,
		}
		maps[i] = m
		out.Mapping = append(out.Mapping, m)
	}
	funcs := make([]*pprof.Function, len(p.Funcs))
	for i, f := range p.Funcs {
		fn := &pprof.Function{ID: uint64(i + 1), Name: f.Name, SystemName: f.Name, Filename: f.File}
		funcs[i] = fn
		out.Function = append(out.Function, fn)
	}
	locs := make([]*pprof.Location, len(p.Frames))
	for i, fr := range p.Frames {
		f := p.Funcs[fr.Func]
		loc := &pprof.Location{ID: uint64(i + 1), Mapping: maps[f.Image], Address: fr.Addr,
			Line: []pprof.Line{{Function: funcs[fr.Func], Line: int64(fr.Line)}}}
		locs[i] = loc
		out.Location = append(out.Location, loc)
	}
	var stack []int32
	for _, e := range p.Entries {
		if int(e.Event) != event {
			continue
		}
		stack = p.Stack(stack[:0], e.Stack)
		s := &pprof.Sample{Value: []int64{int64(e.Count), int64(e.Period)}, Location: make([]*pprof.Location, len(stack))}
		for i, fr := range stack {
			s.Location[i] = locs[fr]
		}
		th := p.Threads[e.Thread]
		s.Label = map[string][]string{"comm": {p.Strings[th.Comm]}}
		s.NumLabel = map[string][]int64{"pid": {int64(th.PID)}, "tid": {int64(th.TID)}}
		out.Sample = append(out.Sample, s)
	}
	if err := out.CheckValid(); err != nil {
		return nil, fmt.Errorf("profile: pprof export: %w", err)
	}
	return out, nil
}

// mainImage returns the image of the program the samples of event are
// of, or -1: of the executables (files that are not shared libraries)
// in the samples' stacks, the one in most samples, preferring one a
// sampled thread is named after (its comm: the executable's base name,
// cut to 15 bytes); without executables, the file image in most samples.
func mainImage(p *profile.Profile, event int) int {
	in := make([]uint64, len(p.Images))  // samples with the image in their stack
	named := make([]bool, len(p.Images)) // a thread with it is named after it
	seen := make([]int, len(p.Images))   // entry index+1 that last counted it
	var stack []int32
	for i, e := range p.Entries {
		if int(e.Event) != event {
			continue
		}
		comm := p.Strings[p.Threads[e.Thread].Comm]
		stack = p.Stack(stack[:0], e.Stack)
		for _, fr := range stack {
			im := p.FuncOf(fr).Image
			if seen[im] == i+1 {
				continue
			}
			seen[im] = i + 1
			in[im] += e.Count
			if base := filepath.Base(p.Images[im].Name); base[:min(len(base), 15)] == comm {
				named[im] = true
			}
		}
	}
	best, bestRank := -1, [3]uint64{}
	for i, im := range p.Images {
		if im.Kind != profile.ImageFile || in[i] == 0 {
			continue
		}
		exe := !strings.Contains(filepath.Base(im.Name), ".so")
		rank := [3]uint64{b2u(exe && named[i]), b2u(exe), in[i]}
		if best < 0 || slices.Compare(rank[:], bestRank[:]) > 0 {
			best, bestRank = i, rank
		}
	}
	return best
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
