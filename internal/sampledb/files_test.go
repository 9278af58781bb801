package sampledb

import (
	"math/rand/v2"
	"testing"
)

// TestFileTable checks the table against a map through random puts and
// removes (removal shifts probe runs back, wrapping around the end).
func TestFileTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var ft fileTable
	ref := map[fileKey]*sfile{}
	for range 20000 {
		k := fileKey{dep: ImageID(rng.IntN(50)), tid: rng.Uint32N(20)}
		if sf := ref[k]; sf != nil && rng.IntN(2) == 0 {
			ft.remove(sf)
			delete(ref, k)
		} else if sf == nil {
			sf = &sfile{key: k}
			ft.put(sf)
			ref[k] = sf
		}
		if ft.len() != len(ref) {
			t.Fatalf("len %d, want %d", ft.len(), len(ref))
		}
		probe := fileKey{dep: ImageID(rng.IntN(50)), tid: rng.Uint32N(20)}
		if got := ft.get(&probe); got != ref[probe] {
			t.Fatalf("get(%v) = %p, want %p", probe, got, ref[probe])
		}
	}
	for k, sf := range ref {
		if ft.get(&k) != sf {
			t.Fatalf("lost %v", k)
		}
	}
	if len(ft.all()) != len(ref) {
		t.Fatalf("all: %d, want %d", len(ft.all()), len(ref))
	}
}

// TestDeltas checks the in-memory counts against a map, with keys that
// crowd one region (the home slot keeps a 256-byte region together) and
// keys far apart, through growth and flushes (clearing deltas).
func TestDeltas(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var d deltas
	ref := map[[2]uint64]uint64{}
	for round := range 5 {
		for range 20000 {
			k := [2]uint64{rng.Uint64N(300), rng.Uint64N(3)}
			if rng.IntN(4) == 0 {
				k[0] = rng.Uint64() // far away
			}
			d.add(k[0], k[1], 1)
			ref[k]++
		}
		got := map[[2]uint64]uint64{}
		for _, i := range d.dirty {
			s := d.slots[i]
			if _, dup := got[[2]uint64{s.k1, s.k2}]; dup || s.delta == 0 {
				t.Fatalf("round %d: slot %d listed dirty twice or clean", round, i)
			}
			got[[2]uint64{s.k1, s.k2}] = s.delta
		}
		if len(got) != len(ref) {
			t.Fatalf("round %d: %d dirty keys, want %d", round, len(got), len(ref))
		}
		for k, n := range ref {
			if got[k] != n {
				t.Fatalf("round %d: key %v counted %d, want %d", round, k, got[k], n)
			}
		}
		// A flush.
		for _, i := range d.dirty {
			d.slots[i].delta = 0
		}
		d.dirty = d.dirty[:0]
		clear(ref)
	}
}
