package perfdata

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// dec reads little- or big-endian fields from a byte slice. Reading past
// the end sets short and yields zeros, so a decoder can read a whole
// record and check once; it never panics.
type dec struct {
	b     []byte
	off   int
	swap  bool
	short bool
}

func (d *dec) u64() uint64 {
	if d.off+8 > len(d.b) {
		d.short = true
		d.off = len(d.b)
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	if d.swap {
		v = bits.ReverseBytes64(v)
	}
	return v
}

func (d *dec) u32() uint32 {
	if d.off+4 > len(d.b) {
		d.short = true
		d.off = len(d.b)
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	if d.swap {
		v = bits.ReverseBytes32(v)
	}
	return v
}

func (d *dec) u16() uint16 {
	if d.off+2 > len(d.b) {
		d.short = true
		d.off = len(d.b)
		return 0
	}
	v := binary.LittleEndian.Uint16(d.b[d.off:])
	d.off += 2
	if d.swap {
		v = bits.ReverseBytes16(v)
	}
	return v
}

func (d *dec) u8() uint8 {
	if d.off >= len(d.b) {
		d.short = true
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

// bytes returns the next n bytes, aliasing the input.
func (d *dec) bytes(n uint64) []byte {
	if n > uint64(len(d.b)-d.off) {
		d.short = true
		d.off = len(d.b)
		return nil
	}
	v := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return v
}

// u64s decodes n u64 words into dst (reused), bounded by the input.
func (d *dec) u64s(dst []uint64, n uint64) []uint64 {
	if n > uint64(len(d.b)-d.off)/8 {
		d.short = true
		d.off = len(d.b)
		return dst[:0]
	}
	// One bounds check for all the words, and no append per word: a
	// DWARF sample's registers and callchain are a few dozen words, and
	// decoding them word by word was a tenth of reading the sample.
	b := d.b[d.off : d.off+int(n)*8]
	d.off += int(n) * 8
	dst = slices.Grow(dst[:0], int(n))[:n]
	for i := range dst {
		dst[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	if d.swap {
		for i, v := range dst {
			dst[i] = bits.ReverseBytes64(v)
		}
	}
	return dst
}

// cstring reads a NUL-terminated string padded to the end of b.
func (d *dec) cstring() string {
	rest := d.b[d.off:]
	for i, c := range rest {
		if c == 0 {
			d.off += i + 1
			return string(rest[:i])
		}
	}
	d.off = len(d.b)
	return string(rest)
}

// le is the encoding every writer in this package uses.
var le = binary.LittleEndian
