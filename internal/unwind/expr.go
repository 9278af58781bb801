package unwind

import "encoding/binary"

// Bounds on evaluating one DWARF expression (DWARF 5, 2.5): the CFI of
// glibc's PLT and signal trampoline and of GCC's stack realignment use a
// handful of operations; a crafted one may branch backwards forever.
const (
	maxExprOps   = 256
	maxExprStack = 64
)

// eval evaluates a DWARF expression in frame f, with push pushed first
// when withPush (the CFA, for a register's rule), and returns the value
// on top of the stack.
func (f *frame) eval(expr []byte, push uint64, withPush bool) (uint64, bool) {
	var st [maxExprStack]uint64
	n := 0
	if withPush {
		st[0], n = push, 1
	}
	r := &reader{b: expr}
	for ops := 0; r.left() > 0; ops++ {
		if ops >= maxExprOps {
			return 0, false
		}
		op := r.u8()
		// Operations that push one value.
		var v uint64
		pushes := true
		switch {
		case op >= 0x30 && op <= 0x4f: // DW_OP_lit0..31
			v = uint64(op - 0x30)
		case op >= 0x70 && op <= 0x8f: // DW_OP_breg0..31
			reg, ok := f.reg(uint64(op - 0x70))
			if !ok {
				return 0, false
			}
			v = reg + uint64(r.sleb())
		default:
			pushes = false
		}
		if !pushes {
			switch op {
			case 0x03: // DW_OP_addr
				v, pushes = r.u64(), true
			case 0x08: // DW_OP_const1u
				v, pushes = uint64(r.u8()), true
			case 0x09: // DW_OP_const1s
				v, pushes = uint64(int64(int8(r.u8()))), true
			case 0x0a: // DW_OP_const2u
				v, pushes = uint64(r.u16()), true
			case 0x0b: // DW_OP_const2s
				v, pushes = uint64(int64(int16(r.u16()))), true
			case 0x0c: // DW_OP_const4u
				v, pushes = uint64(r.u32()), true
			case 0x0d: // DW_OP_const4s
				v, pushes = uint64(int64(int32(r.u32()))), true
			case 0x0e, 0x0f: // DW_OP_const8u, DW_OP_const8s
				v, pushes = r.u64(), true
			case 0x10: // DW_OP_constu
				v, pushes = r.uleb(), true
			case 0x11: // DW_OP_consts
				v, pushes = uint64(r.sleb()), true
			case 0x92: // DW_OP_bregx
				reg, ok := f.reg(r.uleb())
				if !ok {
					return 0, false
				}
				v, pushes = reg+uint64(r.sleb()), true
			}
		}
		if r.err != nil {
			return 0, false
		}
		if pushes {
			if n == maxExprStack {
				return 0, false
			}
			st[n] = v
			n++
			continue
		}
		// Operations on the stack.
		need := func(k int) bool { return n >= k }
		switch op {
		case 0x06: // DW_OP_deref
			if !need(1) {
				return 0, false
			}
			w, ok := f.stack.word(st[n-1])
			if !ok {
				return 0, false
			}
			st[n-1] = w
		case 0x94: // DW_OP_deref_size
			size := int(r.u8())
			if !need(1) || size < 1 || size > 8 {
				return 0, false
			}
			w, ok := f.stack.word(st[n-1])
			if !ok {
				return 0, false
			}
			if size < 8 {
				w &= 1<<(8*size) - 1
			}
			st[n-1] = w
		case 0x12: // DW_OP_dup
			if !need(1) || n == maxExprStack {
				return 0, false
			}
			st[n] = st[n-1]
			n++
		case 0x13: // DW_OP_drop
			if !need(1) {
				return 0, false
			}
			n--
		case 0x14: // DW_OP_over
			if !need(2) || n == maxExprStack {
				return 0, false
			}
			st[n] = st[n-2]
			n++
		case 0x15: // DW_OP_pick
			i := int(r.u8())
			if i >= n || n == maxExprStack {
				return 0, false
			}
			st[n] = st[n-1-i]
			n++
		case 0x16: // DW_OP_swap
			if !need(2) {
				return 0, false
			}
			st[n-1], st[n-2] = st[n-2], st[n-1]
		case 0x17: // DW_OP_rot
			if !need(3) {
				return 0, false
			}
			st[n-1], st[n-2], st[n-3] = st[n-2], st[n-3], st[n-1]
		case 0x19: // DW_OP_abs
			if !need(1) {
				return 0, false
			}
			if int64(st[n-1]) < 0 {
				st[n-1] = -st[n-1]
			}
		case 0x1f: // DW_OP_neg
			if !need(1) {
				return 0, false
			}
			st[n-1] = -st[n-1]
		case 0x20: // DW_OP_not
			if !need(1) {
				return 0, false
			}
			st[n-1] = ^st[n-1]
		case 0x23: // DW_OP_plus_uconst
			if !need(1) {
				return 0, false
			}
			st[n-1] += r.uleb()
		case 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x21, 0x22, 0x24, 0x25, 0x26, 0x27,
			0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e:
			if !need(2) {
				return 0, false
			}
			a, b := st[n-2], st[n-1]
			n--
			var res uint64
			switch op {
			case 0x1a: // DW_OP_and
				res = a & b
			case 0x1b: // DW_OP_div (signed)
				if b == 0 || int64(b) == -1 {
					return 0, false
				}
				res = uint64(int64(a) / int64(b))
			case 0x1c: // DW_OP_minus
				res = a - b
			case 0x1d: // DW_OP_mod
				if b == 0 {
					return 0, false
				}
				res = a % b
			case 0x1e: // DW_OP_mul
				res = a * b
			case 0x21: // DW_OP_or
				res = a | b
			case 0x22: // DW_OP_plus
				res = a + b
			case 0x24: // DW_OP_shl
				if b < 64 {
					res = a << b
				}
			case 0x25: // DW_OP_shr
				if b < 64 {
					res = a >> b
				}
			case 0x26: // DW_OP_shra
				res = uint64(int64(a) >> min(b, 63))
			case 0x27: // DW_OP_xor
				res = a ^ b
			default: // DW_OP_eq, ge, gt, le, lt, ne: signed comparisons
				x, y := int64(a), int64(b)
				t := false
				switch op {
				case 0x29:
					t = x == y
				case 0x2a:
					t = x >= y
				case 0x2b:
					t = x > y
				case 0x2c:
					t = x <= y
				case 0x2d:
					t = x < y
				case 0x2e:
					t = x != y
				}
				if t {
					res = 1
				}
			}
			st[n-1] = res
		case 0x2f, 0x28: // DW_OP_skip, DW_OP_bra
			d := int16(r.u16())
			if op == 0x28 {
				if !need(1) {
					return 0, false
				}
				n--
				if st[n] == 0 {
					continue
				}
			}
			to := r.off + int(d)
			if to < 0 || to > len(r.b) {
				return 0, false
			}
			r.off = to
		case 0x96: // DW_OP_nop
		default:
			// Register locations (DW_OP_reg*), pieces, TLS and the
			// rest have no place in a CFA rule.
			return 0, false
		}
		if r.err != nil {
			return 0, false
		}
	}
	if n == 0 {
		return 0, false
	}
	return st[n-1], true
}

// word reads the 8 bytes at addr from the stack copy.
func (s *Stack) word(addr uint64) (uint64, bool) {
	if addr < s.Addr || addr-s.Addr > uint64(len(s.Data)) || uint64(len(s.Data))-(addr-s.Addr) < 8 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(s.Data[addr-s.Addr:]), true
}
