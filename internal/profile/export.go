package profile

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// Pprof converts the samples of one event into a pprof profile, with a
// mapping per image (build-id included), a function per Func and, when
// the profile has them, source lines.
func (p *Profile) Pprof(event int) (*profile.Profile, error) {
	if event < 0 || event >= len(p.Events) {
		return nil, fmt.Errorf("profile: no event %d", event)
	}
	ev := p.Events[event]
	unit := "events"
	if strings.HasPrefix(ev.Name, "cpu-clock") || strings.HasPrefix(ev.Name, "task-clock") {
		unit = "nanoseconds" // the clock events count time
	}
	// No TimeNanos: sample times are CLOCK_MONOTONIC, not wall time.
	out := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: ev.Name, Unit: unit}},
		PeriodType: &profile.ValueType{Type: ev.Name, Unit: unit},
		Period:     int64(ev.Period),
	}
	if p.EndNS > p.StartNS {
		out.DurationNanos = int64(p.EndNS - p.StartNS)
	}
	if len(p.Cmdline) > 0 {
		out.Comments = []string{strings.Join(p.Cmdline, " ")}
	}
	maps := make([]*profile.Mapping, len(p.Images))
	for i, im := range p.Images {
		m := &profile.Mapping{
			ID: uint64(i + 1), Start: im.Start, Limit: im.Limit, Offset: im.Offset,
			File: im.Name, BuildID: im.BuildID,
			HasFunctions: im.NoSymbols == "" && im.Kind != ImageUnknown,
		}
		maps[i] = m
		out.Mapping = append(out.Mapping, m)
	}
	funcs := make([]*profile.Function, len(p.Funcs))
	for i, f := range p.Funcs {
		fn := &profile.Function{ID: uint64(i + 1), Name: f.Name, SystemName: f.Name, Filename: f.File}
		funcs[i] = fn
		out.Function = append(out.Function, fn)
	}
	locs := make([]*profile.Location, len(p.Frames))
	for i, fr := range p.Frames {
		f := p.Funcs[fr.Func]
		loc := &profile.Location{ID: uint64(i + 1), Mapping: maps[f.Image], Address: fr.Addr,
			Line: []profile.Line{{Function: funcs[fr.Func], Line: int64(fr.Line)}}}
		locs[i] = loc
		out.Location = append(out.Location, loc)
	}
	var stack []int32
	for _, e := range p.Entries {
		if int(e.Event) != event {
			continue
		}
		stack = p.Stack(stack[:0], e.Stack)
		s := &profile.Sample{Value: []int64{int64(e.Count), int64(e.Period)}, Location: make([]*profile.Location, len(stack))}
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

// foldedName keeps names from breaking the format: flame-graph tools
// split frames on ';' and the count off at the last space.
var foldedName = strings.NewReplacer(";", ":", " ", "_")

// WriteFolded writes the samples of one event as folded stacks,
// "comm;root;...;leaf period" per line, sorted, for flame-graph tools.
func (p *Profile) WriteFolded(w io.Writer, event int) error {
	sums := map[string]uint64{}
	var stack []int32
	var sb strings.Builder
	for _, e := range p.Entries {
		if int(e.Event) != event {
			continue
		}
		stack = p.Stack(stack[:0], e.Stack)
		sb.Reset()
		sb.WriteString(p.Strings[p.Threads[e.Thread].Comm])
		for i := len(stack) - 1; i >= 0; i-- {
			sb.WriteByte(';')
			sb.WriteString(foldedName.Replace(p.FuncOf(stack[i]).Name))
		}
		sums[sb.String()] += e.Period
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
