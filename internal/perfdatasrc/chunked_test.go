package perfdatasrc

import "testing"

// TestChunked checks the list across chunk boundaries: indexes, order,
// pointers that stay good as it grows, and stopping early.
func TestChunked(t *testing.T) {
	var c chunked[int]
	n := 3*chunkLen + 5
	ptrs := make([]*int, n)
	for i := range n {
		ptrs[i] = c.add(i * 7)
	}
	if c.len() != n {
		t.Fatalf("len %d, want %d", c.len(), n)
	}
	for i := range n {
		if *c.at(i) != i*7 || c.at(i) != ptrs[i] {
			t.Fatalf("element %d: %d at %p, want %d at %p where add put it", i, *c.at(i), c.at(i), i*7, ptrs[i])
		}
	}
	seen := 0
	c.all(func(i int, v *int) bool {
		if i != seen || *v != i*7 {
			t.Fatalf("all: element %d is %d at index %d", seen, *v, i)
		}
		seen++
		return i < chunkLen+1
	})
	if seen != chunkLen+2 {
		t.Errorf("all went on to %d elements after fn returned false at %d", seen, chunkLen+1)
	}
	var empty chunked[int]
	empty.all(func(int, *int) bool { t.Error("all called fn on an empty list"); return true })
}
