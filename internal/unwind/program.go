package unwind

import "fmt"

// DWARF register numbers of x86-64 (System V psABI, figure 3.36): not
// the order perf writes them in (regs.go maps that).
const (
	regRAX = 0
	regRDX = 1
	regRCX = 2
	regRBX = 3
	regRSI = 4
	regRDI = 5
	regRBP = 6
	regRSP = 7
	regR12 = 12
	regR15 = 15
	regRA  = 16 // the return address column: the caller's RIP
	// numRegs are the columns a ruleset keeps: the general registers
	// and the return address. Vector registers are never needed to
	// find a caller.
	numRegs = 17
)

// ruleKind is how a register (or the CFA) is recovered in the caller.
type ruleKind uint8

const (
	ruleUndefined ruleKind = iota // not recoverable
	ruleSame                      // unchanged from the callee
	ruleOffset                    // saved at CFA+off
	ruleValOffset                 // is CFA+off
	ruleRegister                  // held in register reg
	ruleExpr                      // saved at the address expression off computes
	ruleValExpr                   // is the value expression off computes
	// The CFA's own kinds.
	cfaReg  // register reg + off
	cfaExpr // expression off
)

// rule is one column of a row. For expressions, off is the
// expression's index in the Table's exprs.
type rule struct {
	kind ruleKind
	reg  uint8
	off  int32
}

// ruleset is the state of every column at one address; rows with equal
// rulesets share one (Table.rules).
type ruleset struct {
	cfa    rule
	regs   [numRegs]rule
	signal bool // a signal trampoline: its caller's pc is not a return address
	// live has bit i set where regs[i] is not ruleUndefined: a step
	// visits only those columns, most rows leaving half of them lost.
	// Derived from regs (setLive), it is neither compared nor cached.
	live uint32
}

// setLive computes rs.live from its columns.
func (rs *ruleset) setLive() {
	rs.live = 0
	for i, r := range rs.regs {
		if r.kind != ruleUndefined {
			rs.live |= 1 << i
		}
	}
}

// abiDefault is the rule of a column the CIE says nothing of (the
// psABI's, as libdw's x86-64 backend sets it): callee-saved registers
// keep their values, the caller's stack pointer is the CFA, the rest
// are lost.
func abiDefault() ruleset {
	var rs ruleset
	for _, r := range []int{regRBX, regRBP, regR12, regR12 + 1, regR12 + 2, regR15} {
		rs.regs[r] = rule{kind: ruleSame}
	}
	rs.regs[regRSP] = rule{kind: ruleValOffset}
	return rs
}

// maxRememberDepth bounds DW_CFA_remember_state's stack.
const maxRememberDepth = 32

// maxExprLen bounds one DWARF expression in a CFA program.
const maxExprLen = 1024

// machine runs the CFA programs of one section's FDEs.
type machine struct {
	sec     Section
	eh      bool
	exprs   *[]byte
	initial ruleset // after the CIE's initial instructions (DW_CFA_restore)
	cur     ruleset
	stack   []ruleset
	loc     uint64
}

// run executes f's CIE's initial instructions and f's program, calling
// emit(addr, rs) for each row: rs holds from addr until the next row's
// address or f.end.
func (m *machine) run(f *fde, emit func(addr uint64, rs *ruleset)) error {
	m.cur = abiDefault()
	m.cur.signal = f.cie.signal
	m.stack = m.stack[:0]
	m.loc = f.start
	if err := m.exec(f, f.cie.initial, nil); err != nil {
		return err
	}
	m.initial = m.cur
	if err := m.exec(f, f.program, emit); err != nil {
		return err
	}
	if m.loc < f.end {
		emit(m.loc, &m.cur)
	}
	return nil
}

// column returns the rule of DWARF column reg, or nil for one no
// ruleset keeps.
func (m *machine) column(rs *ruleset, c *cie, reg uint64) *rule {
	switch {
	case reg == c.raReg:
		return &rs.regs[regRA]
	case reg < regRA:
		return &rs.regs[reg]
	}
	return nil
}

// advance moves the location to loc, emitting the row that held before.
func (m *machine) advance(f *fde, loc uint64, emit func(uint64, *ruleset)) bool {
	if loc < m.loc || loc > f.end {
		return false // backwards, or past the FDE: its rows end here
	}
	if emit != nil && loc > m.loc {
		emit(m.loc, &m.cur)
	}
	m.loc = loc
	return true
}

// offset is a data-aligned offset, or false when it overflows a rule.
func offset(v int64, c *cie) (int32, bool) {
	o := v * c.dataAlign
	if c.dataAlign != 0 && o/c.dataAlign != v || o != int64(int32(o)) {
		return 0, false
	}
	return int32(o), true
}

// exec runs the instructions in sp; initial instructions get no emit,
// since they cannot advance the location.
func (m *machine) exec(f *fde, sp span, emit func(uint64, *ruleset)) error {
	c := f.cie
	r := &reader{b: m.sec.Data[:sp.end], off: sp.start}
	bad := func(what string) error {
		return fmt.Errorf("%w: %s in the CFA program at offset %d", errCFI, what, r.off)
	}
	set := func(reg uint64, ru rule) {
		if p := m.column(&m.cur, c, reg); p != nil {
			*p = ru
		}
	}
	setOffset := func(reg uint64, kind ruleKind, v int64) error {
		o, ok := offset(v, c)
		if !ok {
			return bad("offset out of range")
		}
		set(reg, rule{kind: kind, off: o})
		return nil
	}
	expr := func() (int32, error) {
		n := r.uleb()
		if n > maxExprLen || n > uint64(r.left()) {
			return 0, bad("expression too long")
		}
		b := r.bytes(int(n))
		at := len(*m.exprs)
		if at > 1<<30 {
			return 0, bad("too many expressions")
		}
		*m.exprs = append(*m.exprs, byte(n), byte(n>>8))
		*m.exprs = append(*m.exprs, b...)
		return int32(at), nil
	}
	for r.left() > 0 {
		op := r.u8()
		var err error
		switch op & 0xc0 {
		case 0x40: // DW_CFA_advance_loc
			if !m.advance(f, m.loc+uint64(op&0x3f)*c.codeAlign, emit) {
				return nil
			}
			continue
		case 0x80: // DW_CFA_offset
			err = setOffset(uint64(op&0x3f), ruleOffset, int64(r.uleb()))
		case 0xc0: // DW_CFA_restore
			m.restore(c, uint64(op&0x3f))
		default:
			switch op {
			case 0x00: // DW_CFA_nop
			case 0x01: // DW_CFA_set_loc
				var loc uint64
				if m.eh {
					var ok bool
					if loc, ok = r.pointer(c.fdeEnc, m.sec.Addr, 0); !ok {
						return bad("set_loc")
					}
				} else if c.addrSize == 4 {
					loc = uint64(r.u32())
				} else {
					loc = r.u64()
				}
				if emit == nil || !m.advance(f, loc, emit) {
					return nil
				}
			case 0x02: // DW_CFA_advance_loc1
				if !m.advance(f, m.loc+uint64(r.u8())*c.codeAlign, emit) {
					return nil
				}
			case 0x03: // DW_CFA_advance_loc2
				if !m.advance(f, m.loc+uint64(r.u16())*c.codeAlign, emit) {
					return nil
				}
			case 0x04: // DW_CFA_advance_loc4
				if !m.advance(f, m.loc+uint64(r.u32())*c.codeAlign, emit) {
					return nil
				}
			case 0x05: // DW_CFA_offset_extended
				reg := r.uleb()
				err = setOffset(reg, ruleOffset, int64(r.uleb()))
			case 0x06: // DW_CFA_restore_extended
				m.restore(c, r.uleb())
			case 0x07: // DW_CFA_undefined
				set(r.uleb(), rule{kind: ruleUndefined})
			case 0x08: // DW_CFA_same_value
				set(r.uleb(), rule{kind: ruleSame})
			case 0x09: // DW_CFA_register
				reg, reg2 := r.uleb(), r.uleb()
				if reg2 >= numRegs {
					set(reg, rule{kind: ruleUndefined})
				} else {
					set(reg, rule{kind: ruleRegister, reg: uint8(reg2)})
				}
			case 0x0a: // DW_CFA_remember_state
				if len(m.stack) >= maxRememberDepth {
					return bad("remember_state nested too deep")
				}
				m.stack = append(m.stack, m.cur)
			case 0x0b: // DW_CFA_restore_state
				if len(m.stack) == 0 {
					return bad("restore_state without remember_state")
				}
				// The CFA too, as GCC's epilogues expect and as
				// libgcc's, GDB's and libunwind's unwinders do.
				m.cur = m.stack[len(m.stack)-1]
				m.stack = m.stack[:len(m.stack)-1]
			case 0x0c: // DW_CFA_def_cfa
				reg, off := r.uleb(), r.uleb()
				err = m.defCFA(reg, int64(off), bad)
			case 0x0d: // DW_CFA_def_cfa_register
				reg := r.uleb()
				off := int64(0)
				if m.cur.cfa.kind == cfaReg {
					off = int64(m.cur.cfa.off)
				}
				err = m.defCFA(reg, off, bad)
			case 0x0e: // DW_CFA_def_cfa_offset
				off := r.uleb()
				if m.cur.cfa.kind != cfaReg {
					return bad("def_cfa_offset without a register CFA")
				}
				err = m.defCFA(uint64(m.cur.cfa.reg), int64(off), bad)
			case 0x0f: // DW_CFA_def_cfa_expression
				var at int32
				if at, err = expr(); err == nil {
					m.cur.cfa = rule{kind: cfaExpr, off: at}
				}
			case 0x10, 0x16: // DW_CFA_expression, DW_CFA_val_expression
				reg := r.uleb()
				var at int32
				if at, err = expr(); err == nil {
					kind := ruleExpr
					if op == 0x16 {
						kind = ruleValExpr
					}
					set(reg, rule{kind: kind, off: at})
				}
			case 0x11: // DW_CFA_offset_extended_sf
				reg := r.uleb()
				err = setOffset(reg, ruleOffset, r.sleb())
			case 0x12: // DW_CFA_def_cfa_sf
				reg, off := r.uleb(), r.sleb()
				o, ok := offset(off, c)
				if !ok {
					return bad("offset out of range")
				}
				err = m.defCFA(reg, int64(o), bad)
			case 0x13: // DW_CFA_def_cfa_offset_sf
				off := r.sleb()
				o, ok := offset(off, c)
				if !ok || m.cur.cfa.kind != cfaReg {
					return bad("def_cfa_offset_sf")
				}
				m.cur.cfa.off = o
			case 0x14: // DW_CFA_val_offset
				reg := r.uleb()
				err = setOffset(reg, ruleValOffset, int64(r.uleb()))
			case 0x15: // DW_CFA_val_offset_sf
				reg := r.uleb()
				err = setOffset(reg, ruleValOffset, r.sleb())
			case 0x2e: // DW_CFA_GNU_args_size: for exception handling only
				r.uleb()
			case 0x2f: // DW_CFA_GNU_negative_offset_extended
				reg := r.uleb()
				err = setOffset(reg, ruleOffset, -int64(r.uleb()))
			default:
				return bad(fmt.Sprintf("unknown instruction %#x", op))
			}
		}
		if err != nil {
			return err
		}
		if r.err != nil {
			return r.err
		}
	}
	return r.err
}

// defCFA sets the CFA to register reg plus off.
func (m *machine) defCFA(reg uint64, off int64, bad func(string) error) error {
	if reg >= numRegs || off != int64(int32(off)) {
		return bad("CFA register or offset out of range")
	}
	m.cur.cfa = rule{kind: cfaReg, reg: uint8(reg), off: int32(off)}
	return nil
}

// restore sets reg's rule back to what the CIE's initial instructions
// left.
func (m *machine) restore(c *cie, reg uint64) {
	if p := m.column(&m.cur, c, reg); p != nil {
		*p = *m.column(&m.initial, c, reg)
	}
}
