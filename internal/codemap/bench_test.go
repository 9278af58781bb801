package codemap

import (
	"math/rand/v2"
	"testing"
)

// jitWorkload loads n functions of 64 B to 4 KB with a bump allocator that
// wraps around a 64 MB code space, so that later code reuses the addresses
// of earlier code, as a JIT's code cache does; one load per microsecond,
// every 50th followed by a move as a compacting GC would.
func jitWorkload(n int) *Builder {
	r := rand.New(rand.NewPCG(1, 2))
	b := NewBuilder()
	const base, space = 0x7f0000000000, 64 << 20
	next := uint64(0)
	for i := range n {
		size := uint64(64 + r.IntN(4032))
		if next+size > space {
			next = 0
		}
		t := uint64(i) * 1000
		if err := b.Load(t, base+next, size, "JS:*f /app.js:1:1", uint64(i), nil); err != nil {
			panic(err)
		}
		if i%50 == 0 {
			if err := b.Move(t+500, uint64(i), base+next, base+space+next, size); err != nil {
				panic(err)
			}
		}
		next += size
	}
	return b
}

type probe struct{ addr, t, gen uint64 }

// probes picks samples inside live code: a random entry, a random time in
// its life, a random byte of it.
func probes(m *Map, n int) []probe {
	r := rand.New(rand.NewPCG(3, 4))
	es := m.Entries()
	ps := make([]probe, n)
	for i := range ps {
		e := &es[r.IntN(len(es))]
		life := e.Unload - e.Load
		if e.Unload == Forever {
			life = 1_000_000
		}
		ps[i] = probe{e.Start + r.Uint64N(e.End-e.Start), e.Load + r.Uint64N(life), e.Gen}
	}
	return ps
}

func BenchmarkBuild1M(b *testing.B) {
	bl := jitWorkload(1_000_000)
	b.ReportAllocs()
	for b.Loop() {
		bl.Build()
	}
}

func BenchmarkLookup1M(b *testing.B) {
	benchProbes(b, func(m *Map, p probe) bool { _, ok := m.Lookup(p.addr, p.t); return ok })
}

func BenchmarkLookupSeq1M(b *testing.B) {
	benchProbes(b, func(m *Map, p probe) bool { _, ok := m.LookupSeq(p.addr, p.gen); return ok })
}

func BenchmarkAmbiguous1M(b *testing.B) {
	benchProbes(b, func(m *Map, p probe) bool { es, _, _ := m.Ambiguous(p.addr); return len(es) > 0 })
}

// benchProbes runs find on a 1M-load map for probes of its code, each
// of which must be found.
func benchProbes(b *testing.B, find func(*Map, probe) bool) {
	m := jitWorkload(1_000_000).Build()
	ps := probes(m, 1<<20)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if p := ps[i&(len(ps)-1)]; !find(m, p) {
			b.Fatalf("probe %+v missed", p)
		}
		i++
	}
}
