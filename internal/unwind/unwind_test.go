package unwind

import (
	"encoding/binary"
	"slices"
	"testing"
)

// ehFrame assembles an .eh_frame at address addr: one CIE (code
// alignment 1, data alignment -8, return address column 16, FDE
// addresses pc-relative sdata4; CFA rsp+8, return address at CFA-8) and
// an FDE per fdes entry, which gives start, length and CFA program.
type fdeSpec struct {
	start, length uint64
	program       []byte
}

func ehFrame(addr uint64, signal bool, fdes ...fdeSpec) Section {
	le := binary.LittleEndian
	aug := "zR"
	if signal {
		aug = "zRS"
	}
	cie := []byte{0, 0, 0, 0, 1}
	cie = append(cie, aug...)
	cie = append(cie, 0, 1, 0x78, 16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1)
	for len(cie)%4 != 0 {
		cie = append(cie, 0)
	}
	b := le.AppendUint32(nil, uint32(len(cie)))
	b = append(b, cie...)
	for _, f := range fdes {
		start := len(b)
		body := le.AppendUint32(nil, uint32(start+4)) // back to the CIE at 0
		at := addr + uint64(start+8)
		body = le.AppendUint32(body, uint32(int32(int64(f.start)-int64(at))))
		body = le.AppendUint32(body, uint32(f.length))
		body = append(body, 0) // no augmentation data
		body = append(body, f.program...)
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
		b = le.AppendUint32(b, uint32(len(body)))
		b = append(b, body...)
	}
	return Section{Data: le.AppendUint32(b, 0), Addr: addr}
}

// Programs for a function at 0x1000: push rbp at +1, sub rsp at +4,
// the epilogue's remember/restore at +0x20.
var (
	pushSub = []byte{
		0x41, 0x0e, 16, 0x86, 2, // +1: CFA rsp+16, rbp at CFA-16
		0x43, 0x0e, 48, // +4: CFA rsp+48
		0x5c, 0x0a, 0x0e, 16, 0x41, 0x0e, 8, 0x41, 0x0b, // +0x20: remember; CFA rsp+16; +1: rsp+8; +1: restore
	}
)

func TestTableRows(t *testing.T) {
	sec := ehFrame(0x5000, false, fdeSpec{0x1000, 0x40, pushSub}, fdeSpec{0x2000, 0x10, nil})
	tb, err := Build(sec, Section{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		addr   uint64
		cfaOff int32
		rbp    ruleKind
	}{
		{0x1000, 8, ruleSame}, {0x1001, 16, ruleOffset}, {0x1003, 16, ruleOffset}, {0x1004, 48, ruleOffset},
		{0x1020, 16, ruleOffset}, {0x1021, 8, ruleOffset}, {0x1022, 48, ruleOffset}, {0x103f, 48, ruleOffset},
		{0x2000, 8, ruleSame}, {0x200f, 8, ruleSame},
	}
	for _, c := range cases {
		rs := tb.lookup(c.addr)
		if rs == nil {
			t.Fatalf("%#x: no rules", c.addr)
		}
		if rs.cfa != (rule{kind: cfaReg, reg: regRSP, off: c.cfaOff}) || rs.regs[regRBP].kind != c.rbp || rs.regs[regRA] != (rule{kind: ruleOffset, off: -8}) {
			t.Errorf("%#x: %+v, want CFA rsp+%d, rbp %d", c.addr, rs, c.cfaOff, c.rbp)
		}
	}
	for _, a := range []uint64{0, 0xfff, 0x1040, 0x1fff, 0x2010, 1 << 40} {
		if rs := tb.lookup(a); rs != nil {
			t.Errorf("%#x: rules %+v outside every FDE", a, rs)
		}
	}
}

func TestTableRoundTrip(t *testing.T) {
	expr := []byte{0x0f, 3, 0x77, 8, 0x06} // def_cfa_expression: rsp+8, deref
	sec := ehFrame(0x5000, false, fdeSpec{0x1000, 0x40, pushSub}, fdeSpec{0x2000, 0x10, expr})
	tb, err := Build(sec, Section{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := tb.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got Table
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.addrs, tb.addrs) || !slices.Equal(got.sets, tb.sets) || !slices.Equal(got.rules, tb.rules) || !slices.Equal(got.exprs, tb.exprs) {
		t.Fatalf("round trip changed the table:\n%+v\n%+v", tb, got)
	}
	for i := range b {
		c := slices.Clone(b)
		c[i] ^= 0xff
		var bad Table
		if bad.UnmarshalBinary(c) == nil {
			// A flipped byte in an offset or address can still be a
			// table; it must still be one a lookup can read.
			for _, a := range []uint64{0x1000, 0x1021, 0x2000} {
				if rs := bad.lookup(a); rs != nil && rs.cfa.kind == cfaExpr && bad.expr(rs.cfa.off) == nil {
					t.Fatalf("byte %d: a CFA expression outside the pool", i)
				}
			}
		}
	}
}

// space is an AddressSpace of one table over [lo, hi) and JIT code over
// [jitLo, jitHi).
type space struct {
	t            *Table
	lo, hi       uint64
	jitLo, jitHi uint64
	named        uint64 // JIT code from here to jitHi is named by a handler
}

func (s *space) Code(pc uint64) (Code, bool) {
	switch {
	case pc >= s.lo && pc < s.hi:
		return Code{Table: s.t}, true
	case pc >= s.jitLo && pc < s.jitHi:
		return Code{JIT: true, Named: s.named != 0 && pc >= s.named}, true
	}
	return Code{}, false
}

// stackOf lays out words from sp up.
func stackOf(sp uint64, words ...uint64) *Stack {
	var b []byte
	for _, w := range words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return &Stack{Data: b, Addr: sp}
}

func regsOf(ip, sp, bp uint64) Regs {
	var r Regs
	r.Set(RegIP, ip)
	r.Set(RegSP, sp)
	r.Set(RegBP, bp)
	return r
}

func TestUnwind(t *testing.T) {
	// f at 0x1000 (pushSub), g at 0x2000 (CFA rsp+8), _start at 0x3000
	// whose return address is undefined.
	start := []byte{0x07, 16} // DW_CFA_undefined ra
	tb, err := Build(ehFrame(0x5000, false, fdeSpec{0x1000, 0x40, pushSub}, fdeSpec{0x2000, 0x10, nil}, fdeSpec{0x3000, 0x10, start}), Section{})
	if err != nil {
		t.Fatal(err)
	}
	as := &space{t: tb, lo: 0x1000, hi: 0x4000, jitLo: 0x9000, jitHi: 0xa000}
	const sp = 0x7f000
	// In f after the sub (CFA = sp+48): saved rbp at CFA-16, the return
	// address into g at CFA-8; g's frame (CFA = its sp+8): the return
	// address into _start.
	stack := stackOf(sp, 0, 0, 0, 0, 0xbbbb /* rbp */, 0x2005, 0x3003)
	out, stop := Unwind(regsOf(0x1010, sp, 0xaaaa), stack, as, nil, 10)
	if want := []uint64{0x1010, 0x2004, 0x3002}; !slices.Equal(out, want) || stop != StopEnd {
		t.Fatalf("got %#x (%v), want %#x (end)", out, stop, want)
	}
	// The frame limit.
	if out, stop := Unwind(regsOf(0x1010, sp, 0xaaaa), stack, as, nil, 2); len(out) != 2 || stop != StopMax {
		t.Errorf("max 2: %#x (%v)", out, stop)
	}
	// A copy that ends before the return address.
	short := &Stack{Data: stack.Data[:40], Addr: sp}
	if out, stop := Unwind(regsOf(0x1010, sp, 0xaaaa), short, as, nil, 10); len(out) != 1 || stop != StopStack {
		t.Errorf("short copy: %#x (%v)", out, stop)
	}
	// A pc no mapping holds.
	if out, stop := Unwind(regsOf(0x8000, sp, 0), stack, as, nil, 10); len(out) != 1 || stop != StopNoMap {
		t.Errorf("no mapping: %#x (%v)", out, stop)
	}
}

func TestUnwindFramePointer(t *testing.T) {
	tb, _ := Build(ehFrame(0x5000, false, fdeSpec{0x2000, 0x10, nil}, fdeSpec{0x3000, 0x10, []byte{0x07, 16}}), Section{})
	as := &space{t: tb, lo: 0x1000, hi: 0x4000, jitLo: 0x9000, jitHi: 0xa000}
	const sp = 0x7f000
	// JIT code at 0x9100 with a frame: rbp = sp+16 points at the saved
	// rbp (0: the outermost frame pointer), the return address into g
	// above it; g returns into _start.
	stack := stackOf(sp, 1, 2, 0, 0x2005, 0x3003)
	out, stop := Unwind(regsOf(0x9100, sp, sp+16), stack, as, nil, 10)
	if want := []uint64{0x9100, 0x2004, 0x3002}; !slices.Equal(out, want) || stop != StopEnd {
		t.Fatalf("got %#x (%v), want %#x (end)", out, stop, want)
	}
	// Native code without call frame information (crtstuff's
	// __do_global_dtors_aux) keeps a frame, and its caller keeps data
	// in rbp, saved below the frame: the step is taken, as libunwind
	// takes it, and the caller's rows apply.
	data := stackOf(sp, 1, 2, 0x1000, 0x2005, 0x3003)
	if out, stop := Unwind(regsOf(0x1100, sp, sp+16), data, as, nil, 10); !slices.Equal(out, []uint64{0x1100, 0x2004, 0x3002}) || stop != StopEnd {
		t.Errorf("a saved rbp below the frame: %#x (%v), want %#x (end)", out, stop, []uint64{0x1100, 0x2004, 0x3002})
	}
	// Implausible frame pointers stop the chain in the JIT code: below
	// the stack pointer, misaligned, past the copy, or a return address
	// into no code.
	for _, bp := range []uint64{sp - 16, sp + 17, sp + 4096, sp} {
		if out, stop := Unwind(regsOf(0x9100, sp, bp), stack, as, nil, 10); len(out) != 1 || stop != StopJIT {
			t.Errorf("rbp %#x: %#x (%v), want a stop in JIT code", bp, out, stop)
		}
	}
}

func TestUnwindLoop(t *testing.T) {
	// A CFA rule that does not move the stack pointer up (CFA rsp+0,
	// return address at CFA+0) must not walk the same frame forever.
	prog := []byte{0x0e, 0, 0x05, 16, 0} // CFA rsp+0; ra at CFA+0
	tb, err := Build(ehFrame(0x5000, false, fdeSpec{0x1000, 0x10, prog}), Section{})
	if err != nil {
		t.Fatal(err)
	}
	as := &space{t: tb, lo: 0x1000, hi: 0x2000}
	const sp = 0x7f000
	out, stop := Unwind(regsOf(0x1004, sp, 0), stackOf(sp, 0x1005), as, nil, 100)
	if len(out) != 1 || stop != StopLoop {
		t.Fatalf("got %#x (%v), want a loop stop after one frame", out, stop)
	}
}

func TestExpressionBounds(t *testing.T) {
	// DW_OP_skip -3 forever: bounded by maxExprOps.
	f := &frame{regs: regsOf(0x1000, 0x7f000, 0), stack: stackOf(0x7f000, 1)}
	if _, ok := f.eval([]byte{0x2f, 0xfd, 0xff}, 0, false); ok {
		t.Error("an endless loop evaluated")
	}
	// glibc's PLT rule: rsp+8 + ((rip&15) >= 11 ? 8 : 0).
	plt := []byte{0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22}
	for _, c := range []struct{ ip, want uint64 }{{0x1000, 0x7f008}, {0x100b, 0x7f010}} {
		f.regs.Set(RegIP, c.ip)
		if v, ok := f.eval(plt, 0, false); !ok || v != c.want {
			t.Errorf("PLT at %#x: %#x %v, want %#x", c.ip, v, ok, c.want)
		}
	}
	// A deref outside the stack copy fails.
	if _, ok := f.eval([]byte{0x77, 64, 0x06}, 0, false); ok {
		t.Error("a deref past the copy evaluated")
	}
}

func TestPerfRegs(t *testing.T) {
	const perfMask = 0xff0fff // perf record --call-graph dwarf's
	vals := make([]uint64, 0, 20)
	for i := range 24 {
		if perfMask&(1<<i) != 0 {
			vals = append(vals, uint64(100+i))
		}
	}
	r := PerfRegs(perfMask, vals)
	// perf's AX=0 BX=1 CX=2 DX=3 SI=4 DI=5 BP=6 SP=7 IP=8, R8=16...
	want := map[int]uint64{regRAX: 100, regRBX: 101, regRCX: 102, regRDX: 103, regRSI: 104, regRDI: 105, regRBP: 106, regRSP: 107, regRA: 108, 8: 116, 15: 123}
	for reg, v := range want {
		if r.V[reg] != v || r.Valid&(1<<reg) == 0 {
			t.Errorf("DWARF register %d = %d, want %d", reg, r.V[reg], v)
		}
	}
}

func TestUnwindScan(t *testing.T) {
	as := &space{jitLo: 0x9000, jitHi: 0xa000, named: 0x9800}
	const sp = 0x7f000
	// A helper stub at 0x9100 (no data names it, no frame pointer)
	// called from a loop at 0x9800 (named): its return address is the
	// third word; the words before it point into the stub itself and
	// into no code.
	stack := stackOf(sp, 0x9105, 0x5, 0x9811, 0x9900)
	out, stop := Unwind(regsOf(0x9100, sp, 0x1234), stack, as, nil, 10)
	if want := []uint64{0x9100, 0x9810}; !slices.Equal(out, want) || stop != StopJIT {
		t.Fatalf("got %#x (%v), want %#x and a stop in the loop's frame", out, stop, want)
	}
	// Named code itself is never scanned: its frame ends the chain.
	if out, stop := Unwind(regsOf(0x9810, sp, 0x1234), stack, as, nil, 10); len(out) != 1 || stop != StopJIT {
		t.Errorf("from named code: %#x (%v)", out, stop)
	}
	// Nothing named within maxScan words.
	far := stackOf(sp, 0, 0, 0, 0, 0, 0, 0, 0, 0x9811)
	if out, stop := Unwind(regsOf(0x9100, sp, 0x1234), far, as, nil, 10); len(out) != 1 || stop != StopJIT {
		t.Errorf("beyond the scan: %#x (%v)", out, stop)
	}
}
