package daemon

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
