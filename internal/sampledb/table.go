package sampledb

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"unsafe"
)

// table reads a sample file's bytes: a mapping shared with the daemon that
// writes it, or a copy. Every load is atomic, so a reader never sees a
// torn count, and sees a node's fields before the used count that
// publishes it (the writer stores them in that order).
type table struct {
	b []byte // 8-byte aligned
}

// aligned returns b, or a copy of it if it is not 8-byte aligned.
func aligned(b []byte) []byte {
	if len(b) == 0 || uintptr(unsafe.Pointer(&b[0]))%8 == 0 {
		return b
	}
	words := make([]uint64, (len(b)+7)/8)
	c := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(b))
	copy(c, b)
	return c
}

// p64 and p32 point at a field; indexing its last byte checks the whole
// field is inside the file.
func (t table) p64(off uint64) *uint64 {
	_ = t.b[off+7]
	return (*uint64)(unsafe.Pointer(&t.b[off]))
}

func (t table) p32(off uint64) *uint32 {
	_ = t.b[off+3]
	return (*uint32)(unsafe.Pointer(&t.b[off]))
}

func (t table) load64(off uint64) uint64 { return atomic.LoadUint64(t.p64(off)) }
func (t table) load32(off uint64) uint32 { return atomic.LoadUint32(t.p32(off)) }

// node returns node i's keys and count.
func (t table) node(i uint64) (k1, k2, count uint64) {
	off := headerSize + i*nodeSize
	return t.load64(off), t.load64(off + 8), t.load64(off + 16)
}

// layout is what validation found: the table's capacity, and how many
// node slots (node 0 included) were published when it looked.
type layout struct {
	capacity, used uint64
	// unlinked says node used-1 is published but not yet in its chain:
	// the writer stopped (or was stopped) between the two stores of an
	// insert.
	unlinked bool
}

// errMoved says the table grew while it was being validated: the
// reader maps the file again and retries.
var errMoved = errors.New("sample file grew while read")

// validate checks everything a reader relies on: the header, sizes, and
// a table whose published nodes each sit once in their key's chain, with
// chains that only lead to older nodes (so they end), keys unique, counts
// not zero. Errors name the offset. A table the writer grew meanwhile
// (its old chains become node space) is reported as errMoved.
func validate(t table) (Header, layout, error) {
	h, l, err := validateOnce(t)
	if err != nil && l.capacity != 0 && len(t.b) >= headerSize && t.load64(offCapacity) != l.capacity {
		return h, l, errMoved
	}
	return h, l, err
}

func validateOnce(t table) (Header, layout, error) {
	h, err := decodeHeader(t.b)
	if err != nil {
		return h, layout{}, err
	}
	var l layout
	l.capacity = t.load64(offCapacity)
	l.used = t.load64(offUsed)
	c, u := l.capacity, l.used
	if c < minCapacity || c > maxCapacity || c&(c-1) != 0 {
		return h, l, fmt.Errorf("%w: offset %d: capacity %d is not a power of two from %d to %d", ErrFormat, offCapacity, c, minCapacity, maxCapacity)
	}
	if need := uint64(fileSize(c)); uint64(len(t.b)) < need {
		return h, l, fmt.Errorf("%w: offset %d: capacity %d needs %d bytes, the file has %d", ErrFormat, offCapacity, c, need, len(t.b))
	}
	if u < 1 || u > c {
		return h, l, fmt.Errorf("%w: offset %d: %d nodes used of %d", ErrFormat, offUsed, u, c)
	}
	bo, no := bucketsOff(c), nextOff(c)
	// Nodes: each points to an older one, so every chain ends.
	for i := uint64(1); i < u; i++ {
		if err := checkNode(t, &h, i, no); err != nil {
			return h, l, err
		}
	}
	seen := make([]uint64, (u+63)/64)
	var keys [][2]uint64
	for b := uint64(0); b < c; b++ {
		keys = keys[:0]
		for i := uint64(t.load32(bo + 4*b)); i != 0; i = uint64(t.load32(no + 4*i)) {
			at := bo + 4*b
			if i >= u {
				// A node published after we loaded used: the writer
				// publishes before it links, so used says so now.
				if nu := t.load64(offUsed); i >= nu || i >= c {
					return h, l, fmt.Errorf("%w: offset %d: chain %d leads to node %d, past the %d used", ErrFormat, at, b, i, nu)
				}
				if err := checkNode(t, &h, i, no); err != nil {
					return h, l, err
				}
			} else {
				if seen[i/64]&(1<<(i%64)) != 0 {
					return h, l, fmt.Errorf("%w: offset %d: node %d is in a chain twice", ErrFormat, headerSize+i*nodeSize, i)
				}
				seen[i/64] |= 1 << (i % 64)
			}
			k1, k2, _ := t.node(i)
			if bucketOf(k1, k2, c) != b {
				return h, l, fmt.Errorf("%w: offset %d: node %d is in chain %d, its key's chain is %d", ErrFormat, headerSize+i*nodeSize, i, b, bucketOf(k1, k2, c))
			}
			keys = append(keys, [2]uint64{k1, k2})
		}
		if len(keys) > 1 {
			slices.SortFunc(keys, func(a, b [2]uint64) int {
				if a[0] != b[0] {
					return cmpU64(a[0], b[0])
				}
				return cmpU64(a[1], b[1])
			})
			for j := 1; j < len(keys); j++ {
				if keys[j] == keys[j-1] {
					return h, l, fmt.Errorf("%w: offset %d: chain %d holds key (%#x, %#x) twice", ErrFormat, bo+4*b, b, keys[j][0], keys[j][1])
				}
			}
		}
	}
	for i := uint64(1); i < u; i++ {
		if seen[i/64]&(1<<(i%64)) != 0 {
			continue
		}
		if i != u-1 {
			return h, l, fmt.Errorf("%w: offset %d: node %d is in no chain", ErrFormat, headerSize+i*nodeSize, i)
		}
		// Only the last node may wait for its link; if it is unlinked,
		// its key must not be in the chain it will join.
		k1, k2, _ := t.node(i)
		b := bucketOf(k1, k2, c)
		for j := uint64(t.load32(bo + 4*b)); j != 0; j = uint64(t.load32(no + 4*j)) {
			if j1, j2, _ := t.node(j); j1 == k1 && j2 == k2 && j != i {
				return h, l, fmt.Errorf("%w: offset %d: node %d repeats the key of node %d", ErrFormat, headerSize+i*nodeSize, i, j)
			}
		}
		l.unlinked = true
	}
	if t.load64(offCapacity) != c {
		return h, l, errMoved
	}
	return h, l, nil
}

func checkNode(t table, h *Header, i, no uint64) error {
	off := headerSize + i*nodeSize
	_, k2, count := t.node(i)
	if next := uint64(t.load32(no + 4*i)); next >= i {
		return fmt.Errorf("%w: offset %d: node %d's chain goes on to node %d, not an older one", ErrFormat, no+4*i, i, next)
	}
	if count == 0 {
		return fmt.Errorf("%w: offset %d: node %d has a count of 0", ErrFormat, off+16, i)
	}
	if h.Kind == KeyOffset && k2 != 0 {
		return fmt.Errorf("%w: offset %d: node %d has a second key in an offset-keyed file", ErrFormat, off+8, i)
	}
	return nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lookup finds a key's node in a table validated at capacity c with used
// nodes; 0 if it is not there. The steps are bounded: a table that grew
// since it was validated has other bytes where its chains were.
func (t table) lookup(k1, k2, c, used uint64) uint64 {
	bo, no := bucketsOff(c), nextOff(c)
	steps := uint64(0)
	for i := uint64(t.load32(bo + 4*bucketOf(k1, k2, c))); i != 0 && i < c && steps < used; i = uint64(t.load32(no + 4*i)) {
		steps++
		if n1, n2, _ := t.node(i); n1 == k1 && n2 == k2 {
			return i
		}
	}
	return 0
}
