package codemap

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// op is one builder call in a test scenario.
type op struct {
	kind           kind
	t, start, size uint64
	name           string
	gen, oldStart  uint64
}

func load(t, start, size uint64, name string, gen uint64) op {
	return op{kind: evLoad, t: t, start: start, size: size, name: name, gen: gen}
}
func move(t, gen, from, to, size uint64) op {
	return op{kind: evMove, t: t, gen: gen, oldStart: from, start: to, size: size}
}
func unload(t, start, size uint64) op { return op{kind: evUnload, t: t, start: start, size: size} }

func build(t testing.TB, ops []op) *Map {
	t.Helper()
	b := NewBuilder()
	for _, o := range ops {
		var err error
		switch o.kind {
		case evLoad:
			err = b.Load(o.t, o.start, o.size, o.name, o.gen, nil)
		case evMove:
			err = b.Move(o.t, o.gen, o.oldStart, o.start, o.size)
		case evUnload:
			err = b.Unload(o.t, o.start, o.size)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.Build()
}

type query struct {
	addr, t uint64
	want    string // "" for nothing
}

func TestLookup(t *testing.T) {
	tests := []struct {
		name    string
		ops     []op
		skew    uint64
		queries []query
	}{
		{
			name: "reuse at one address: A, then B over the same range, then C partly over B",
			ops: []op{
				load(100, 0x1000, 0x100, "A", 1),
				load(200, 0x1000, 0x100, "B", 2),
				load(300, 0x1080, 0x100, "C", 3),
			},
			queries: []query{
				{0x1000, 99, ""}, {0x1000, 100, "A"}, {0x10ff, 199, "A"},
				{0x1000, 200, "B"}, {0x10ff, 299, "B"},
				// C ends all of B, not just the part it covers.
				{0x1000, 300, ""}, {0x1080, 300, "C"}, {0x117f, 1 << 40, "C"},
				{0x1180, 300, ""}, {0x0fff, 250, ""}, {0x1100, 250, ""},
			},
		},
		{
			name: "events out of order are sorted; equal times keep call order",
			ops: []op{
				load(300, 0x1000, 0x10, "late", 3),
				load(100, 0x1000, 0x10, "first", 1),
				load(100, 0x1000, 0x10, "second", 2),
			},
			queries: []query{{0x1000, 100, "second"}, {0x1000, 299, "second"}, {0x1000, 300, "late"}},
		},
		{
			name: "unload ends everything it touches",
			ops: []op{
				load(10, 0x1000, 0x10, "a", 1),
				load(10, 0x1010, 0x10, "b", 2),
				load(10, 0x1020, 0x10, "c", 3),
				unload(20, 0x100f, 0x2),
			},
			queries: []query{{0x1000, 19, "a"}, {0x1000, 20, ""}, {0x101f, 20, ""}, {0x1020, 20, "c"}},
		},
		{
			name: "move carries the name; the old range empties; the new range is overwritten",
			ops: []op{
				load(10, 0x1000, 0x10, "f", 7),
				load(10, 0x2000, 0x10, "victim", 8),
				move(20, 7, 0x1000, 0x2008, 0x10),
				move(30, 7, 0x2008, 0x3000, 0x10),
			},
			queries: []query{
				{0x1000, 19, "f"}, {0x1000, 20, ""},
				{0x2000, 19, "victim"}, {0x2000, 20, ""}, {0x2008, 20, "f"}, {0x2017, 29, "f"}, {0x2008, 30, ""},
				{0x3000, 30, "f"}, {0x300f, Forever - 1, "f"},
			},
		},
		{
			name: "move of an unknown generation still overwrites its destination",
			ops: []op{
				load(10, 0x2000, 0x10, "x", 1),
				move(20, 99, 0x1000, 0x2000, 0x10),
			},
			queries: []query{{0x2000, 19, "x"}, {0x2000, 20, ""}},
		},
		{
			name: "skew fills a gap before a load but never displaces live code",
			skew: 5,
			ops: []op{
				load(100, 0x1000, 0x10, "old", 1),
				unload(150, 0x1000, 0x10),
				load(200, 0x1000, 0x10, "fresh", 2),
				load(300, 0x1000, 0x10, "newer", 3),
			},
			queries: []query{
				{0x1000, 94, ""}, {0x1000, 95, "old"}, {0x1000, 194, ""}, {0x1000, 195, "fresh"},
				{0x1000, 296, "fresh"}, {0x1000, 300, "newer"},
			},
		},
		{
			name: "adjacent ranges meet exactly",
			ops: []op{
				load(0, 0x1000, 0x10, "lo", 1),
				load(0, 0x1010, 0x10, "hi", 2),
			},
			queries: []query{{0x0fff, 0, ""}, {0x1000, 0, "lo"}, {0x100f, 0, "lo"}, {0x1010, 0, "hi"}, {0x101f, 0, "hi"}, {0x1020, 0, ""}},
		},
		{
			name:    "top of the address space",
			ops:     []op{load(0, Forever-0xf, 0xf, "top", 1)},
			queries: []query{{Forever - 0xf, 0, "top"}, {Forever - 1, 0, "top"}, {Forever, 0, ""}, {0, 0, ""}},
		},
		{name: "empty map", queries: []query{{0, 0, ""}, {0x1000, 5, ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := build(t, tt.ops)
			m.Skew = tt.skew
			for _, q := range tt.queries {
				e, ok := m.Lookup(q.addr, q.t)
				got := ""
				if ok {
					got = e.Name
					if q.addr < e.Start || q.addr >= e.End {
						t.Errorf("Lookup(%#x, %d) = %+v, which does not cover the address", q.addr, q.t, e)
					}
				}
				if got != q.want {
					t.Errorf("Lookup(%#x, %d) = %q, want %q", q.addr, q.t, got, q.want)
				}
			}
		})
	}
}

func TestUnloadTimes(t *testing.T) {
	m := build(t, []op{
		load(100, 0x1000, 0x100, "A", 1),
		load(200, 0x1000, 0x100, "B", 2),
		load(300, 0x1080, 0x100, "C", 3),
		move(400, 3, 0x1080, 0x5000, 0x100),
	})
	var got []string
	for _, e := range m.Entries() {
		got = append(got, fmt.Sprintf("%s %#x-%#x gen %d [%d,%d)", e.Name, e.Start, e.End, e.Gen, e.Load, e.Unload))
	}
	want := []string{
		"A 0x1000-0x1100 gen 1 [100,200)",
		"B 0x1000-0x1100 gen 2 [200,300)",
		"C 0x1080-0x1180 gen 3 [300,400)",
		fmt.Sprintf("C 0x5000-0x5100 gen 3 [400,%d)", uint64(Forever)),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entries:\n got %q\nwant %q", got, want)
	}
	if m.UnmatchedMoves != 0 {
		t.Errorf("UnmatchedMoves = %d", m.UnmatchedMoves)
	}
}

func TestLookupSeq(t *testing.T) {
	m := build(t, []op{
		load(100, 0x1000, 0x100, "A", 1),
		load(200, 0x1000, 0x100, "B", 2),
		move(300, 2, 0x1000, 0x1040, 0x100),
		load(400, 0x9000, 0x10, "D", 4),
	})
	tests := []struct {
		addr, gen uint64
		want      string
		wantStart uint64
	}{
		// A sample stored with sequence 1 names A even though B is at the
		// address now.
		{0x1000, 1, "A", 0x1000},
		{0x10ff, 1, "A", 0x1000},
		{0x1100, 1, "", 0},
		{0x1000, 2, "B", 0x1000},
		{0x1050, 2, "B", 0x1040}, // both of B's places cover it; the later wins
		{0x113f, 2, "B", 0x1040},
		{0x1140, 2, "", 0},
		{0x1000, 3, "", 0},
		{0x9000, 4, "D", 0x9000},
		{0x9000, 1, "", 0},
	}
	for _, tt := range tests {
		e, ok := m.LookupSeq(tt.addr, tt.gen)
		if got := ""; ok != (tt.want != "") || ok && (e.Name != tt.want || e.Start != tt.wantStart) {
			if ok {
				got = fmt.Sprintf("%s at %#x", e.Name, e.Start)
			}
			t.Errorf("LookupSeq(%#x, %d) = %q, want %q at %#x", tt.addr, tt.gen, got, tt.want, tt.wantStart)
		}
	}
}

func TestAmbiguous(t *testing.T) {
	// A perf map: no times, file order only.
	m := build(t, []op{
		load(0, 0x1000, 0x100, "a", 1),
		load(0, 0x1000, 0x100, "b", 2),
		load(0, 0x1080, 0x100, "c", 3),
		load(0, 0x1000, 0x40, "a", 4), // a again: one name, listed once
		load(0, 0x4000, 0x10, "alone", 5),
	})
	tests := []struct {
		addr       uint64
		names      []string
		start, end uint64
	}{
		{0x1000, []string{"a", "b"}, 0x1000, 0x1040},
		{0x1040, []string{"a", "b"}, 0x1040, 0x1080},
		{0x1080, []string{"a", "b", "c"}, 0x1080, 0x1100},
		{0x1100, []string{"c"}, 0x1100, 0x1180},
		{0x4008, []string{"alone"}, 0x4000, 0x4010},
		{0x2000, nil, 0, 0},
	}
	for _, tt := range tests {
		es, start, end := m.Ambiguous(tt.addr)
		var names []string
		for _, e := range es {
			names = append(names, e.Name)
		}
		if !reflect.DeepEqual(names, tt.names) || start != tt.start || end != tt.end {
			t.Errorf("Ambiguous(%#x) = %q over %#x-%#x, want %q over %#x-%#x", tt.addr, names, start, end, tt.names, tt.start, tt.end)
		}
	}
	// Lookup on a timeless map names the last writer.
	if e, ok := m.Lookup(0x1090, 0); !ok || e.Name != "c" {
		t.Errorf("Lookup(0x1090, 0) = %v, want c", e)
	}
}

func TestBuilderRejects(t *testing.T) {
	b := NewBuilder()
	for _, err := range []error{
		b.Load(0, 0x1000, 0, "empty", 1, nil),
		b.Load(0, Forever, 2, "wraps", 1, nil),
		b.Move(0, 1, 0x1000, 0x2000, 0),
		b.Unload(0, Forever-1, 3),
		// Ranges no code can have, though they fit the address space.
		b.Load(0, 0x1000, 1<<63, "2^63 bytes", 1, nil),
		b.Load(0, 0x1000, MaxCodeSize+1, "just over", 1, nil),
		b.Move(0, 1, 0x1000, 0x2000, 1<<40),
		b.Unload(0, 0, 1<<47),
	} {
		if !errors.Is(err, ErrBadRange) {
			t.Errorf("err = %v, want ErrBadRange", err)
		}
	}
	if n := len(b.Build().Entries()); n != 0 {
		t.Errorf("%d entries from rejected calls", n)
	}
	if err := b.Load(0, 0x1000, MaxCodeSize, "the largest", 1, nil); err != nil {
		t.Errorf("a range of MaxCodeSize: %v", err)
	}
}

// TestAgainstModel compares the Map with a direct replay of the events on
// random scenarios dense in reuse, overlap, moves and equal times.
func TestAgainstModel(t *testing.T) {
	var hits, misses int
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 1))
		var ops []op
		for i := range 1 + r.IntN(60) {
			tm := uint64(r.IntN(30))
			start := uint64(r.IntN(40)) * 4
			size := uint64(1+r.IntN(6)) * 4
			switch r.IntN(10) {
			case 0, 1:
				ops = append(ops, move(tm, uint64(r.IntN(i+1)), uint64(r.IntN(40))*4, start, size))
			case 2:
				ops = append(ops, unload(tm, start, size))
			default:
				ops = append(ops, load(tm, start, size, fmt.Sprintf("f%d", i), uint64(i)))
			}
		}
		m := build(t, ops)
		m.Skew = 0
		mod := replay(ops)
		for q := range 400 {
			addr, tm := uint64(r.IntN(200)), uint64(r.IntN(32))
			want := mod.at(addr, tm)
			e, ok := m.Lookup(addr, tm)
			got := ""
			if ok {
				got = fmt.Sprintf("%s@%d+%d", e.Name, e.Start, e.Load)
			}
			if ok {
				hits++
			} else {
				misses++
			}
			if got != want {
				t.Fatalf("seed %d query %d: Lookup(%d, %d) = %q, model says %q\nops %+v", seed, q, addr, tm, got, want, ops)
			}
		}
	}
	if hits < 10000 || misses < 10000 {
		t.Errorf("%d hits, %d misses: the scenarios do not exercise both", hits, misses)
	}
}

// model is the obvious implementation: replay the sorted events, keeping
// snapshots of what is live.
type model struct {
	times []uint64
	snaps [][]modelEntry // live set after all events at times[i]
}

type modelEntry struct {
	name             string
	start, end, load uint64
	gen              uint64
}

func replay(ops []op) *model {
	sorted := append([]op(nil), ops...)
	// Stable insertion sort by time: equal times keep call order.
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && sorted[j].t < sorted[j-1].t; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	m := &model{}
	var live []modelEntry
	latest := map[uint64]modelEntry{}
	clear := func(start, end uint64) {
		kept := live[:0:0]
		for _, e := range live {
			if e.end <= start || end <= e.start {
				kept = append(kept, e)
			}
		}
		live = kept
	}
	for _, o := range sorted {
		end := o.start + o.size
		switch o.kind {
		case evLoad:
			clear(o.start, end)
			e := modelEntry{o.name, o.start, end, o.t, o.gen}
			live = append(live, e)
			latest[o.gen] = e
		case evMove:
			src, ok := latest[o.gen]
			if ok && src.start == o.oldStart {
				kept := live[:0:0]
				for _, e := range live {
					if e != src {
						kept = append(kept, e)
					}
				}
				live = kept
			}
			clear(o.start, end)
			if ok && src.start == o.oldStart {
				e := modelEntry{src.name, o.start, end, o.t, o.gen}
				live = append(live, e)
				latest[o.gen] = e
			}
		case evUnload:
			clear(o.start, end)
		}
		if n := len(m.times); n > 0 && m.times[n-1] == o.t {
			m.snaps[n-1] = append([]modelEntry(nil), live...)
		} else {
			m.times = append(m.times, o.t)
			m.snaps = append(m.snaps, append([]modelEntry(nil), live...))
		}
	}
	return m
}

func (m *model) at(addr, t uint64) string {
	i := -1
	for j, tm := range m.times {
		if tm <= t {
			i = j
		}
	}
	if i < 0 {
		return ""
	}
	for _, e := range m.snaps[i] {
		if e.start <= addr && addr < e.end {
			return fmt.Sprintf("%s@%d+%d", e.name, e.start, e.load)
		}
	}
	return ""
}

// TestOverlaps: a range overlaps the map where code ever covered one of
// its addresses, whenever it was loaded, and not where it only touches
// code's bounds or falls in a gap.
func TestOverlaps(t *testing.T) {
	b := NewBuilder()
	for _, l := range []struct{ t, start, size uint64 }{{0, 0x1000, 0x100}, {0, 0x2000, 0x100}, {5, 0x2080, 0x100}, {0, 0x3000, 0x10}} {
		if err := b.Load(l.t, l.start, l.size, "f", 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	m := b.Build()
	for _, c := range []struct {
		start, end uint64
		want       bool
	}{
		{0x0f00, 0x1000, false}, // ends where code starts
		{0x0f00, 0x1001, true},
		{0x1000, 0x1001, true},
		{0x10ff, 0x2000, true},
		{0x1100, 0x2000, false}, // the gap between
		{0x1100, 0x4000, true},  // over whole entries
		{0x2100, 0x2180, true},  // the later load's tail
		{0x2180, 0x3000, false},
		{0x3010, 0x9000, false},
		{0x3008, 0x3009, true},
	} {
		if got := m.Overlaps(c.start, c.end); got != c.want {
			t.Errorf("Overlaps(%#x, %#x) = %v, want %v", c.start, c.end, got, c.want)
		}
	}
	if NewBuilder().Build().Overlaps(0, 100) {
		t.Error("an empty map overlaps")
	}
}
