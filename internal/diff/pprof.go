package diff

import (
	"fmt"
	"io"

	pprof "github.com/google/pprof/profile"

	"github.com/jitprof/jitprof/internal/flamegraph"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/report"
)

// Pprof returns the comparison of cur with base as pprof -diff_base
// makes it: cur's samples, and base's with their values negated and the
// label pprof::base=true, in one profile (pprof's views then show the
// change, and percentages of the base). Both are of the base's first
// event (cur's event of the same name, or its only one); JIT code is
// named as Diff matches it, unless exact.
func Pprof(base, cur *profile.Profile, exact bool) (*pprof.Profile, error) {
	pb, pc, err := pprofPair(base, cur, exact)
	if err != nil {
		return nil, err
	}
	return MergeBase(pc, pb)
}

// pprofPair converts base and cur's matching events, JIT code
// normalized unless exact.
func pprofPair(base, cur *profile.Profile, exact bool) (pb, pc *pprof.Profile, err error) {
	ev := EventOf(cur, base, 0)
	if ev < 0 {
		return nil, nil, fmt.Errorf("diff: pprof: %w", ErrNoEvents)
	}
	qb, _ := normalized(base, exact, false)
	qc, _ := normalized(cur, exact, false)
	if pb, err = report.Pprof(qb, 0); err != nil {
		return nil, nil, err
	}
	if pc, err = report.Pprof(qc, ev); err != nil {
		return nil, nil, err
	}
	return pb, pc, nil
}

// MergeBase merges base into cur as pprof -diff_base does: base's
// samples labelled pprof::base=true and negated. base is changed.
func MergeBase(cur, base *pprof.Profile) (*pprof.Profile, error) {
	// One event recorded with different rights (cpu-clock, cpu-clock:u)
	// is one: pprof merges only profiles of the same types.
	base.SampleType, base.PeriodType = cur.SampleType, cur.PeriodType
	base.SetLabel("pprof::base", []string{"true"})
	base.Scale(-1)
	p, err := pprof.Merge([]*pprof.Profile{cur, base})
	if err != nil {
		return nil, fmt.Errorf("diff: pprof: %w", err)
	}
	return p, nil
}

// HTML writes the differential flame graph of cur against base
// (internal/flamegraph): cur's stacks coloured by how each frame's share
// changed, JIT code matched as Diff matches it unless exact. Both are of
// the base's first event, as Pprof.
func HTML(w io.Writer, base, cur *profile.Profile, exact bool, opts flamegraph.Options) error {
	ev := EventOf(cur, base, 0)
	if ev < 0 {
		return fmt.Errorf("diff: html: %w", ErrNoEvents)
	}
	qb, _ := normalized(base, exact, false)
	qc, _ := normalized(cur, exact, false)
	opts.Event, opts.Base, opts.BaseEvent = ev, qb, 0
	return flamegraph.Write(w, qc, opts)
}

// Normalized returns a copy of p whose JIT code is named as Diff
// matches it across runs (Normalize); p when exact. The copy shares all
// but p's function table, in the same order.
func Normalized(p *profile.Profile, exact bool) *profile.Profile {
	q, _ := normalized(p, exact, false)
	return q
}

// BasePprof converts the samples of event of base, JIT code named as
// Diff matches it unless exact, for MergeBase into a profile whose
// addresses are laid out apart (jitprof web's): the base's locations
// keep their functions and lines, not their addresses or mappings, so
// that no view reads the base's code at the other's addresses.
func BasePprof(base *profile.Profile, event int, exact bool) (*pprof.Profile, error) {
	q, _ := normalized(base, exact, false)
	pb, err := report.Pprof(q, event)
	if err != nil {
		return nil, err
	}
	for _, l := range pb.Location {
		l.Mapping, l.Address = nil, 0
	}
	for _, f := range pb.Function {
		f.Filename = "" // its source is the other profile's, or none
	}
	pb.Mapping = nil
	return pb, nil
}

// EventOf is the index of cur's event of the name of base's event, or
// cur's only event when both have one; -1 when there is none.
func EventOf(cur, base *profile.Profile, event int) int {
	if event < 0 || event >= len(base.Events) {
		return -1
	}
	for i, e := range cur.Events {
		if e.Name == base.Events[event].Name {
			return i
		}
	}
	if len(cur.Events) == 1 && len(base.Events) == 1 {
		return 0
	}
	return -1
}
