package ingest

import "testing"

// TestCodeTable: the sequence number of the code live at an address at
// a time, across re-generation at the same address, moves, unloads and
// overlapping loads.
func TestCodeTable(t *testing.T) {
	var c codeTable
	c.load(0x1000, 0x100, 1, 10) // fib, gen 1
	c.load(0x1100, 0x100, 2, 10) // collatz
	c.load(0x1000, 0x100, 3, 50) // the slot re-generated: gen 3
	c.load(0x2000, 0x40, 4, 60)
	c.move(4, 0x3000, 70)
	c.load(0x1180, 0x100, 5, 80) // overlaps collatz's end: it ends
	c.unload(5, 90)
	for _, tc := range []struct {
		addr, t uint64
		seq     uint64
		ok      bool
	}{
		{0x1000, 20, 1, true},
		{0x10ff, 49, 1, true},
		{0x1000, 50, 3, true},
		{0x1050, 1000, 3, true},
		{0x1000, 5, 1, true}, // before any load: the first loaded after
		{0x1150, 20, 2, true},
		{0x1190, 85, 5, true},
		{0x1190, 75, 2, true},
		{0x1190, 95, 5, true}, // unloaded, nothing since: the last there
		{0x2010, 65, 4, true},
		{0x3010, 75, 4, true},
		{0x0fff, 20, 0, false},
		{0x1200 + 0x80, 20, 0, false},
	} {
		seq, ok := c.lookup(tc.addr, tc.t)
		if seq != tc.seq || ok != tc.ok {
			t.Errorf("lookup(%#x, %d) = %d, %v, want %d, %v", tc.addr, tc.t, seq, ok, tc.seq, tc.ok)
		}
	}
	c.prune(60) // forgets fib gen 1 (ended at 50), keeps the rest
	if seq, _ := c.lookup(0x1000, 20); seq != 3 {
		t.Errorf("after prune, lookup(0x1000, 20) = %d, want 3 (gen 1 forgotten)", seq)
	}
	if seq, _ := c.lookup(0x2010, 65); seq != 4 {
		t.Errorf("after prune, code moved at 70 still answers for 65: got %d", seq)
	}
}

// TestCodeTableOneAddress: a JIT that loads code at one address again and
// again (a user's jitdump of 200,000 loads there froze the daemon: each
// load scanned every generation before it) costs each load and lookup
// O(log n): the table keeps the live generation and at most maxEnded
// ended ones, a sample finds the generation live at its time, and one
// older than all those kept the oldest kept.
func TestCodeTableOneAddress(t *testing.T) {
	var c codeTable
	const n = 200_000
	for i := range uint64(n) {
		c.load(0x1000, 0x100, i+1, 10*i)
	}
	if c.live.Len() != 1 || c.ended.Len() != maxEnded {
		t.Errorf("%d live, %d ended generations kept, want 1 and %d", c.live.Len(), c.ended.Len(), maxEnded)
	}
	for _, tc := range []struct{ t, seq uint64 }{
		{10 * (n - 1), n},                       // the live one
		{10*(n-1) + 5, n},                       // later still
		{10 * (n - 2), n - 1},                   // the one before
		{10*(n-100) + 3, n - 99},                // within the generations kept
		{10 * (n - 20_000), n - 20_000 + 1},     // the same, far back
		{10 * (n - maxEnded), n - maxEnded + 1}, // the oldest kept
		{0, n - maxEnded},                       // older: the first loaded after, of those kept
	} {
		if seq, ok := c.lookup(0x1010, tc.t); !ok || seq != tc.seq {
			t.Errorf("lookup(0x1010, %d) = %d, %v, want %d", tc.t, seq, ok, tc.seq)
		}
	}
	c.prune(10 * (n - 10))
	if c.ended.Len() != 10 {
		t.Errorf("%d ended generations after prune, want the 10 that ended since", c.ended.Len())
	}
}

// TestCodeTableLimit: a table at its limit forgets ended generations
// before it refuses a load, and says it is full.
func TestCodeTableLimit(t *testing.T) {
	c := codeTable{limit: 4}
	for i := range uint64(4) {
		if !c.load(0x1000+0x100*i, 0x100, i+1, 10) {
			t.Fatalf("load %d refused below the limit", i)
		}
	}
	c.load(0x1000, 0x100, 5, 20) // ends generation 1, which is then forgotten
	if c.full || c.len() != 4 {
		t.Errorf("full %v with %d entries after replacing one, want room and 4", c.full, c.len())
	}
	if c.load(0x9000, 0x100, 6, 30) || !c.full {
		t.Error("a fifth live generation was taken at a limit of 4")
	}
	if seq, _ := c.lookup(0x1010, 25); seq != 5 {
		t.Errorf("lookup after the refusal: %d, want 5", seq)
	}
}

// BenchmarkCodeTableLoadOneAddress is the cost of one load at an address
// loaded before, ending the code there (a JIT re-generating a function,
// or a user's flood of loads at one address).
func BenchmarkCodeTableLoadOneAddress(b *testing.B) {
	var c codeTable
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		i++
		c.load(0x1000, 0x100, i, 10*i)
	}
}
