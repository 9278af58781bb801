package sampledb

import "testing"

// TestArcEnd: an arc's end in JIT memory keeps its sequence number where
// it fits and the range allows it, and reads back as written; every
// other end is its offset.
func TestArcEnd(t *testing.T) {
	jit := Image{Kind: ImageJIT, Name: "jitlog", TGID: 7, Start: 0x7f0000000000, End: 0x7f0000100000}
	wide := jit
	wide.End = wide.Start + 1<<33
	file := Image{Kind: ImageFile, Name: "/bin/x"}
	for _, c := range []struct {
		im            Image
		off, seq      uint64
		wantOff, want uint64 // read back
	}{
		{jit, 0x1234, 5, 0x1234, 5},
		{jit, 0xfffff, 1<<32 - 1, 0xfffff, 1<<32 - 1},
		{jit, 0x10, 0, 0x10, 0},       // unknown generation
		{jit, 0x10, 1 << 32, 0x10, 0}, // a number that does not fit
		{wide, 1<<32 + 8, 3, 1<<32 + 8, 0},
		{wide, 8, 3, 8, 0}, // not packed in a range over 4 GiB, so not split either
		{file, 0x401000, 0, 0x401000, 0},
	} {
		key := ArcEnd(c.off, c.seq, c.im.End-c.im.Start)
		off, seq := SplitArcEnd(c.im, key)
		if off != c.wantOff || seq != c.want {
			t.Errorf("%v: (%#x, %d) read back as (%#x, %d), want (%#x, %d)", c.im, c.off, c.seq, off, seq, c.wantOff, c.want)
		}
	}
}
