package perfdatasrc

// chunked is a list that grows by whole chunks instead of by copying:
// growing a slice of a million entries copies it a dozen times into
// memory fresh from the system, and in a VM each fresh page is a costly
// fault. Its elements do not move, so pointers to them stay good.
type chunked[T any] struct {
	chunks [][]T
	n      int
}

// chunkLen is the elements in a chunk: a power of two, so an index
// splits with a shift and a mask.
const chunkShift = 12
const chunkLen = 1 << chunkShift

// add appends v and returns a pointer to it in the list.
func (c *chunked[T]) add(v T) *T {
	i := c.n & (chunkLen - 1)
	if i == 0 {
		c.chunks = append(c.chunks, make([]T, chunkLen))
	}
	last := c.chunks[len(c.chunks)-1]
	last[i] = v
	c.n++
	return &last[i]
}

// at returns a pointer to element i, which must be below len.
func (c *chunked[T]) at(i int) *T {
	return &c.chunks[i>>chunkShift][i&(chunkLen-1)]
}

// len returns the number of elements.
func (c *chunked[T]) len() int { return c.n }

// all calls fn with each element in order, until fn returns false.
func (c *chunked[T]) all(fn func(i int, v *T) bool) {
	for ci, ch := range c.chunks {
		base := ci << chunkShift
		for j := range ch[:min(chunkLen, c.n-base)] {
			if !fn(base+j, &ch[j]) {
				return
			}
		}
	}
}
