package anon

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/jitprof/jitprof/internal/codemap"
	"github.com/jitprof/jitprof/internal/perfmap"
)

// sameAsCodemap checks that a perfmapTable of syms names every address
// about their ranges as the claim named them with a codemap.Map of them
// (each name the map gives several addresses made with its address as
// the range was loaded), through a mapResolver as the perf map's claim
// makes it, and says of every such range what Overlaps says.
func sameAsCodemap(t *testing.T, syms []perfmap.Symbol) {
	t.Helper()
	syms = slices.DeleteFunc(slices.Clone(syms), func(s perfmap.Symbol) bool { return s.Size == 0 })
	several := map[string]bool{}
	first := map[string]uint64{}
	for _, s := range syms {
		if at, ok := first[s.Name]; !ok {
			first[s.Name] = s.Start
		} else if at != s.Start {
			several[s.Name] = true
		}
	}
	b := codemap.NewBuilder()
	var wantErr error
	for _, s := range syms {
		name := s.Name
		if several[name] {
			name = fmt.Sprintf("%s [%#x]", name, s.Start)
		}
		if err := b.Load(0, s.Start, s.Size, name, 0, nil); err != nil {
			wantErr = err
			break
		}
	}
	tab, _, err := newPerfmapTable(syms, addrNamed(syms))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("newPerfmapTable: %v; a codemap.Builder: %v", err, wantErr)
	}
	if err != nil {
		return
	}
	got := &mapResolver{m: tab, timeless: true}
	want := &mapResolver{m: b.Build(), timeless: true}
	var probes []uint64
	for _, s := range syms {
		probes = append(probes, s.Start-1, s.Start, s.Start+s.Size/2, s.End()-1, s.End())
	}
	for _, a := range probes {
		g, gok := got.Resolve(a, 5)
		w, wok := want.Resolve(a, 5)
		if gok != wok || !reflect.DeepEqual(g, w) {
			t.Fatalf("Resolve(%#x): %+v (%v), codemap's %+v (%v)", a, g, gok, w, wok)
		}
		for _, gen := range []uint64{0, 1} {
			g, gok = got.ResolveSeq(a, gen)
			w, wok = want.ResolveSeq(a, gen)
			if gok != wok || !reflect.DeepEqual(g, w) {
				t.Fatalf("ResolveSeq(%#x, %d): %+v (%v), codemap's %+v (%v)", a, gen, g, gok, w, wok)
			}
		}
		ge, gs, gend := got.m.Ambiguous(a)
		we, ws, wend := want.m.Ambiguous(a)
		if !reflect.DeepEqual(ge, we) || gs != ws || gend != wend {
			t.Fatalf("Ambiguous(%#x): %v [%#x, %#x), codemap's %v [%#x, %#x)", a, ge, gs, gend, we, ws, wend)
		}
		g2, gok2 := got.m.Lookup(a, 5)
		w2, wok2 := want.m.Lookup(a, 5)
		if gok2 != wok2 || !reflect.DeepEqual(g2, w2) {
			t.Fatalf("Lookup(%#x): %+v (%v), codemap's %+v (%v)", a, g2, gok2, w2, wok2)
		}
	}
	for i, s := range syms {
		for _, r := range [][2]uint64{{s.Start, s.End()}, {s.Start + 1, s.End() + 1}, {s.End(), s.End() + 0x40}, {s.Start - 0x10, s.Start}, {s.Start, s.Start}} {
			if r[1] < r[0] {
				continue
			}
			if g, w := got.m.Overlaps(r[0], r[1]), want.m.Overlaps(r[0], r[1]); g != w {
				t.Fatalf("line %d: Overlaps(%#x, %#x) = %v, codemap's %v", i, r[0], r[1], g, w)
			}
		}
	}
}

// TestPerfmapTable: random perf maps, most of their ranges apart, some
// over others (an address used again, a line written twice, code in
// code), some names at several addresses, are named as a codemap.Map
// names them.
func TestPerfmapTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 200 {
		var syms []perfmap.Symbol
		addr := uint64(0x10000)
		for i := range 1 + rng.IntN(300) {
			s := perfmap.Symbol{Start: addr, Size: uint64(1 + rng.IntN(0x100)), Name: fmt.Sprintf("f%d", rng.IntN(50)), Line: i + 1}
			switch rng.IntN(10) {
			case 0: // over code before
				if len(syms) > 0 {
					o := syms[rng.IntN(len(syms))]
					s.Start = o.Start + uint64(rng.IntN(int(o.Size)+8))
				}
			case 1: // a line written twice
				if len(syms) > 0 {
					s = syms[rng.IntN(len(syms))]
					s.Line = i + 1
				}
			case 2: // names no address
				s.Size = 0
			}
			syms = append(syms, s)
			addr += uint64(rng.IntN(0x200))
		}
		t.Run(fmt.Sprint(round), func(t *testing.T) { sameAsCodemap(t, syms) })
	}
	// One name at two addresses over each other: both names, each with
	// its address, where they overlap.
	sameAsCodemap(t, []perfmap.Symbol{{Start: 0x1000, Size: 0x100, Name: "f"}, {Start: 0x1080, Size: 0x100, Name: "f"}, {Start: 0x2000, Size: 0x10, Name: "f"}})
	// A range past the end of the address space, or too large, is the
	// codemap's error.
	sameAsCodemap(t, []perfmap.Symbol{{Start: 0x1000, Size: 0x10, Name: "a"}, {Start: ^uint64(0) - 4, Size: 0x10, Name: "b"}})
	sameAsCodemap(t, []perfmap.Symbol{{Start: 0x1000, Size: codemap.MaxCodeSize + 1, Name: "a"}})
}

// FuzzPerfmapTable: whatever perf map is read, its table names as a
// codemap.Map of its lines does.
func FuzzPerfmapTable(f *testing.F) {
	f.Add([]byte("1000 10 a\n1008 10 b\n1010 20 a\n2000 8 c\n2000 8 c\n"))
	f.Add([]byte("10 100 outer\n20 10 inner\n200 0 none\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := perfmap.Options{Lenient: true, MaxSymbols: 2000}.Parse(bytes.NewReader(data))
		if err != nil {
			return
		}
		sameAsCodemap(t, m.Symbols)
	})
}
