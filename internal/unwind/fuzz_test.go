package unwind

import (
	"encoding/binary"
	"testing"
)

// FuzzBuild feeds call frame sections to Build: any bytes must give an
// error or a table whose lookups stay inside it.
func FuzzBuild(f *testing.F) {
	f.Add(ehFrame(0x5000, false, fdeSpec{0x1000, 0x40, pushSub}).Data, false)
	f.Add(ehFrame(0x5000, true, fdeSpec{0x1000, 0x40, []byte{0x0f, 3, 0x77, 8, 0x06, 0x10, 16, 2, 0x77, 0}}).Data, false)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x10, 0, 0, 0, 0, 0, 0, 0}, true)
	f.Fuzz(func(t *testing.T, data []byte, debug bool) {
		sec := Section{Data: data, Addr: 0x5000}
		var tb *Table
		if debug {
			tb, _ = Build(Section{}, sec)
		} else {
			tb, _ = Build(sec, Section{})
		}
		if tb == nil {
			return
		}
		for i, a := range tb.addrs {
			if i > 0 && a < tb.addrs[i-1] {
				t.Fatalf("rows out of order at %d", i)
			}
			if rs := tb.lookup(a); rs != nil && rs.cfa.kind == cfaExpr && tb.expr(rs.cfa.off) == nil {
				t.Fatal("a CFA expression outside the pool")
			}
		}
		b, _ := tb.MarshalBinary()
		var back Table
		if err := back.UnmarshalBinary(b); err != nil {
			t.Fatalf("a built table does not decode: %v", err)
		}
	})
}

// FuzzUnmarshal feeds cache files to Table.UnmarshalBinary.
func FuzzUnmarshal(f *testing.F) {
	tb, _ := Build(ehFrame(0x5000, false, fdeSpec{0x1000, 0x40, pushSub}), Section{})
	b, _ := tb.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var tb Table
		if tb.UnmarshalBinary(data) != nil {
			return
		}
		as := &space{t: &tb, lo: 0, hi: ^uint64(0)}
		Unwind(regsOf(0x1010, 0x7f000, 0x7f010), stackOf(0x7f000, 1, 2, 3, 0x1020, 0x1030), as, nil, 64)
	})
}

// FuzzUnwind unwinds fuzzed stacks and registers through a fuzzed
// .eh_frame: bounded work (the frame limit, the expression limits) and
// no read outside the stack copy, whatever the bytes.
func FuzzUnwind(f *testing.F) {
	prog := []byte{0x0f, 5, 0x77, 8, 0x06, 0x23, 8, 0x10, 6, 2, 0x76, 0}
	f.Add(ehFrame(0x5000, false, fdeSpec{0x1000, 0x40, pushSub}, fdeSpec{0x2000, 0x40, prog}).Data,
		[]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x05, 0x20, 0, 0, 0, 0, 0, 0, 0x05, 0x10, 0, 0, 0, 0, 0, 0}, uint64(0x1010), uint64(0x7f010))
	f.Fuzz(func(t *testing.T, eh, stack []byte, ip, bp uint64) {
		tb, _ := Build(Section{Data: eh, Addr: 0x5000}, Section{})
		if tb == nil {
			return
		}
		as := &space{t: tb, lo: 0x1000, hi: 0x4000, jitLo: 0x9000, jitHi: 0xa000}
		st := &Stack{Data: stack, Addr: 0x7f000}
		regs := regsOf(ip, 0x7f000, bp)
		for i := range 16 {
			if len(stack) >= 8*(i+1) && i != regRSP && i != regRBP {
				regs.Set(i, binary.LittleEndian.Uint64(stack[8*i:]))
			}
		}
		out, _ := Unwind(regs, st, as, nil, 127)
		if len(out) > 127 {
			t.Fatalf("%d frames past the limit", len(out))
		}
	})
}
