package diff

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/report"
)

// Compute is how a newer profile's row is compared with the baseline's:
// perf diff's -c.
type Compute struct {
	Kind Kind
	// W1 and W2 weigh the baseline's and the newer period in WDiff.
	W1, W2 int64
}

// Kind is a kind of computation.
type Kind uint8

// The kinds, as perf diff -c names them.
const (
	// DeltaAbs is Delta sorted by its absolute value: perf's default.
	DeltaAbs Kind = iota
	// Delta is the newer share minus the baseline's, in points.
	Delta
	// Ratio is the newer period over the baseline's.
	Ratio
	// WDiff is the newer period times W2 minus the baseline's times W1.
	WDiff
)

// ParseCompute parses perf diff's -c: delta, delta-abs, ratio or
// wdiff:W1,W2.
func ParseCompute(s string) (Compute, error) {
	switch s {
	case "delta":
		return Compute{Kind: Delta}, nil
	case "delta-abs", "":
		return Compute{Kind: DeltaAbs}, nil
	case "ratio":
		return Compute{Kind: Ratio}, nil
	}
	if ws, ok := strings.CutPrefix(s, "wdiff:"); ok {
		w1, w2, ok := strings.Cut(ws, ",")
		a, err1 := strconv.ParseInt(w1, 10, 64)
		b, err2 := strconv.ParseInt(w2, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return Compute{}, fmt.Errorf("-c %s: want wdiff:W1,W2 with integer weights", s)
		}
		return Compute{Kind: WDiff, W1: a, W2: b}, nil
	}
	return Compute{}, fmt.Errorf("-c %s: want delta, delta-abs, ratio or wdiff:W1,W2", s)
}

// String is the computation as -c spells it.
func (c Compute) String() string {
	switch c.Kind {
	case Delta:
		return "delta"
	case Ratio:
		return "ratio"
	case WDiff:
		return fmt.Sprintf("wdiff:%d,%d", c.W1, c.W2)
	}
	return "delta-abs"
}

// title is the computed column's title, as perf diff's.
func (c Compute) title() string {
	switch c.Kind {
	case Delta:
		return "Delta"
	case Ratio:
		return "Ratio"
	case WDiff:
		return "Weighted diff"
	}
	return "Delta Abs"
}

// Options say what to compare and how.
type Options struct {
	// Keys are the sort keys rows are matched by (report.SortKeys'
	// names); empty means dso,sym, as perf diff.
	Keys    []string
	Compute Compute
	// Order is the column rows are sorted by: 0 the baseline's share,
	// N the computation for the Nth newer profile (perf diff's -o,
	// whose default is 1).
	Order int
	// Exact matches JIT code by its names as reported, marks and all.
	Exact bool
	// BaselineOnly keeps only the rows the baseline has (perf's -b).
	BaselineOnly bool
}

// Cell is a row's value in one profile.
type Cell struct {
	Present bool
	Samples uint64
	Period  uint64
}

// Row is one matched row.
type Row struct {
	// Keys are the row's keys as shown: images by their matching names,
	// JIT code normalized unless Options.Exact.
	Keys []string
	// Matched says which rules changed a name of the row, in any
	// profile.
	Matched Rule
	// Names are, per profile, the names the row's symbol had there
	// where they differ from Keys' (with the sym key only).
	Names [][]string
	Cells []Cell // per profile, the baseline's first
}

// Event is the comparison of one event.
type Event struct {
	Name string
	// Totals and Samples are each profile's, of this event.
	Totals, Samples []uint64
	Rows            []Row
}

// Result is a comparison.
type Result struct {
	Keys    []string // the sort keys, resolved
	Compute Compute
	Order   int
	Exact   bool
	// Rules are the rules that matched rows in any event.
	Rules  Rule
	Events []Event
}

// Percent is row r's share of profile i's event total, in percent.
func (ev *Event) Percent(r *Row, i int) float64 {
	if ev.Totals[i] == 0 {
		return 0
	}
	return float64(r.Cells[i].Period) * 100 / float64(ev.Totals[i])
}

// Value is the computation c for profile i (1 and on) of row r, and
// whether it has one: a ratio or weighted diff needs the row in the
// baseline (perf's N/A).
func (ev *Event) Value(r *Row, i int, c Compute) (float64, bool) {
	base, cell := r.Cells[0], r.Cells[i]
	switch c.Kind {
	case Ratio:
		if !base.Present || base.Period == 0 {
			return 0, false
		}
		return float64(cell.Period) / float64(base.Period), true
	case WDiff:
		if !base.Present {
			return 0, false
		}
		return float64(int64(cell.Period)*c.W2 - int64(base.Period)*c.W1), true
	}
	// A row the newer profile lacks went down by all of its share: perf
	// shows no delta there, which hides the rows that changed most.
	return ev.Percent(r, i) - ev.Percent(r, 0), true
}

// ErrNoEvents is the error of comparing profiles with no event in
// common.
var ErrNoEvents = errors.New("the profiles have no event in common")

// Diff compares profiles[0], the baseline, with each of the others.
// Events are matched by name; a profile's filters and left-out JIT
// samples are as loaded.
func Diff(profiles []*profile.Profile, opts Options) (*Result, error) {
	if len(profiles) < 2 {
		return nil, errors.New("diff: a baseline and at least one profile to compare with it")
	}
	keyNames := opts.Keys
	if len(keyNames) == 0 {
		keyNames = []string{report.KeyDSO, report.KeySym}
	}
	keys, err := report.SortKeys(keyNames)
	if err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	if opts.Order < 0 || opts.Order >= len(profiles) {
		return nil, fmt.Errorf("diff: -o %d: there are %d profiles to compare with the baseline", opts.Order, len(profiles)-1)
	}
	res := &Result{Keys: keys, Compute: opts.Compute, Order: opts.Order, Exact: opts.Exact}
	type side struct {
		reps  []report.EventReport
		names *names
	}
	sides := make([]side, len(profiles))
	for i, p := range profiles {
		q, nm := normalized(p, opts.Exact, true)
		reps, err := report.Compute(q, report.Options{Sort: keys})
		if err != nil {
			return nil, fmt.Errorf("diff: %w", err)
		}
		sides[i] = side{reps, nm}
	}
	symKey := slices.Index(keys, report.KeySym)
	dsoKey := slices.Index(keys, report.KeyDSO)
	for _, base := range sides[0].reps {
		ev := Event{Name: base.Event.Name, Totals: make([]uint64, len(sides)), Samples: make([]uint64, len(sides))}
		rows := map[string]*Row{}
		var order []string
		found := false
		for i, s := range sides {
			rep := eventNamed(s.reps, base.Event.Name, len(sides[0].reps) == 1)
			if rep == nil {
				continue
			}
			if i > 0 {
				found = true
			}
			ev.Totals[i], ev.Samples[i] = rep.Event.Total, rep.Event.Count
			for _, r := range rep.Rows {
				k := strings.Join(r.Keys, "\x00")
				row := rows[k]
				if row == nil {
					if opts.BaselineOnly && i > 0 {
						continue
					}
					row = &Row{Keys: r.Keys, Cells: make([]Cell, len(sides)), Names: make([][]string, len(sides))}
					rows[k] = row
					order = append(order, k)
				}
				c := &row.Cells[i]
				c.Present = true
				c.Samples += r.Samples
				c.Period += r.Self
				if symKey >= 0 {
					sym := r.Keys[symKey]
					row.Matched |= s.names.rules[sym]
					for _, n := range s.names.originals[sym] {
						if !slices.Contains(row.Names[i], n) {
							row.Names[i] = append(row.Names[i], n)
						}
					}
				}
				if dsoKey >= 0 {
					row.Matched |= s.names.rules[r.Keys[dsoKey]]
				}
			}
		}
		if !found {
			continue
		}
		for _, k := range order {
			r := rows[k]
			for i := range r.Names {
				slices.Sort(r.Names[i])
			}
			res.Rules |= r.Matched
			ev.Rows = append(ev.Rows, *r)
		}
		sortRows(&ev, opts)
		res.Events = append(res.Events, ev)
	}
	if len(res.Events) == 0 {
		return nil, fmt.Errorf("diff: %w", ErrNoEvents)
	}
	return res, nil
}

// eventNamed is the report of the event named name; with one event on
// each side (only), that one whatever its name: cpu-clock and
// cpu-clock:u are one event recorded with different rights.
func eventNamed(reps []report.EventReport, name string, single bool) *report.EventReport {
	for i := range reps {
		if reps[i].Event.Name == name {
			return &reps[i]
		}
	}
	if single && len(reps) == 1 {
		return &reps[0]
	}
	return nil
}

// sortRows orders ev's rows by the column opts.Order, largest first, as
// perf diff does; rows without a value (N/A) go last, ties by the
// baseline's share, then by keys.
func sortRows(ev *Event, opts Options) {
	key := func(r *Row) (float64, bool) {
		if opts.Order == 0 {
			return ev.Percent(r, 0), true
		}
		v, ok := ev.Value(r, opts.Order, opts.Compute)
		if opts.Compute.Kind == DeltaAbs {
			v = math.Abs(v)
		}
		return v, ok
	}
	slices.SortStableFunc(ev.Rows, func(a, b Row) int {
		va, oka := key(&a)
		vb, okb := key(&b)
		if oka != okb {
			if oka {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(vb, va), cmp.Compare(b.Cells[0].Period, a.Cells[0].Period), slices.Compare(a.Keys, b.Keys))
	})
}

// names says, for a normalized profile, which rules made each shown
// name (a sym key's text, "[.] fib"; an image's) and which names it was
// made of.
type names struct {
	rules     map[string]Rule
	originals map[string][]string
}

// normalized returns a copy of p, sharing all but its image and
// function tables, whose JIT code is named as rows are matched
// (Normalize) and, with images, its images too (ImageName).
func normalized(p *profile.Profile, exact, images bool) (*profile.Profile, *names) {
	q := *p
	nm := &names{rules: map[string]Rule{}, originals: map[string][]string{}}
	if images {
		q.Images = slices.Clone(p.Images)
		for i := range q.Images {
			im := &q.Images[i]
			var r Rule
			im.Name, r = ImageName(&p.Images[i], exact)
			nm.rules[im.Name] |= r
		}
	}
	if exact {
		return &q, nm
	}
	q.Funcs = slices.Clone(p.Funcs)
	for i := range q.Funcs {
		f := &q.Funcs[i]
		if p.Images[f.Image].Kind != profile.ImageAnon {
			continue
		}
		orig := f.Name
		var r Rule
		f.Name, r = Normalize(orig)
		if r == 0 {
			continue
		}
		sym := "[.] " + f.Name // JIT code is user space
		nm.rules[sym] |= r
		if !slices.Contains(nm.originals[sym], orig) {
			nm.originals[sym] = append(nm.originals[sym], orig)
		}
	}
	return &q, nm
}
