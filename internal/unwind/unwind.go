package unwind

import "math/bits"

// Regs are the registers of a frame by DWARF number (RegRA is the
// frame's pc), and which of them are known.
type Regs struct {
	V     [numRegs]uint64
	Valid uint32 // bit i: V[i] is known
}

// Set sets register reg (a DWARF number) to v.
func (r *Regs) Set(reg int, v uint64) {
	r.V[reg] = v
	r.Valid |= 1 << reg
}

// The DWARF numbers of the registers a caller names.
const (
	RegSP = regRSP
	RegBP = regRBP
	RegIP = regRA
)

// Stack is a copy of the stack: Data are the bytes from address Addr
// up (perf copies them from the sampled stack pointer).
type Stack struct {
	Data []byte
	Addr uint64
}

// Code is what an address space knows of the code at an address.
type Code struct {
	// Table is the code's call frame information, nil when it has none.
	Table *Table
	// Bias is what is subtracted from a pc to find its row: the
	// difference between where the image was mapped and its ELF
	// addresses.
	Bias uint64
	// JIT says the code is in anonymous memory: code a JIT generated.
	JIT bool
	// Named says a JIT handler names the code (a compiled function, a
	// PyPy loop), as opposed to JIT code no data describes (a JIT's
	// helper stubs).
	Named bool
}

// AddressSpace is the process being unwound, at the time of the sample:
// the code at an address.
type AddressSpace interface {
	// Code returns what is known of the executable code at pc, and
	// false when no executable mapping holds pc.
	Code(pc uint64) (Code, bool)
}

// Stop says why a chain ended.
type Stop uint8

// The reasons a chain ends.
const (
	StopEnd    Stop = iota // the outermost frame: its return address is undefined
	StopMax                // the frame limit
	StopNoMap              // a pc in no executable mapping
	StopNoInfo             // native code without call frame information or a plausible frame pointer
	StopJIT                // JIT code without unwinding information or a plausible frame pointer
	StopStack              // a read past the stack copy (the copy was too short)
	StopRule               // a rule that could not be evaluated (a register lost, a bad expression)
	StopLoop               // the stack pointer did not move up
	numStops
)

func (s Stop) String() string {
	return [...]string{"end", "max", "no mapping", "no unwind info", "JIT code", "stack copy", "rule", "loop"}[s]
}

// frame is the state of the frame being stepped from.
type frame struct {
	regs  Regs
	stack *Stack
}

func (f *frame) reg(r uint64) (uint64, bool) {
	if r >= numRegs || f.regs.Valid&(1<<r) == 0 {
		return 0, false
	}
	return f.regs.V[r], true
}

// Unwind walks the stack from the sampled registers and appends the pc
// of each frame to out, the sampled one first, at most max of them
// (whatever out held before). The
// pc of every frame but the first is its return address minus one (the
// call instruction; dwfl_frame_pc's and perf's convention), except for
// a signal trampoline's caller, whose pc was interrupted, not a call.
// It reads nothing but regs, stack and what as says, and does bounded
// work per frame: it is a pure function of the sample and the process's
// code at its time.
func Unwind(regs Regs, stack *Stack, as AddressSpace, out []uint64, max int) ([]uint64, Stop) {
	var seen places
	return unwind(regs, stack, as, &seen, out, max)
}

// unwind is Unwind with what the chain finds kept in seen, which must
// be empty.
func unwind(regs Regs, stack *Stack, as AddressSpace, seen *places, out []uint64, max int) ([]uint64, Stop) {
	f := frame{regs: regs, stack: stack}
	pc, ok := f.reg(regRA)
	if !ok || max <= 0 {
		return out, StopRule
	}
	max += len(out)
	out = append(out, pc)
	lookup := pc    // the address whose rows apply: pc-1 in a caller
	signal := false // the frame's code is a signal trampoline
	for len(out) < max {
		code, rs, ok := seen.at(as, lookup)
		if !ok {
			return out, StopNoMap
		}
		var stop Stop
		var done bool
		if rs == nil {
			done, stop = f.framePointer(as, code.JIT)
			if done && code.JIT && !code.Named {
				done, stop = f.scan(as)
			}
			signal = false
		} else {
			done, stop = f.step(rs, code.Table)
			signal = rs.signal
		}
		if done {
			return out, stop
		}
		pc = f.regs.V[regRA]
		if pc == 0 {
			return out, StopEnd
		}
		// Whether the new frame is a signal trampoline is known only
		// from its own rows: look it up at pc and at pc-1 as needed.
		lookup = pc - 1
		if signal {
			lookup = pc
		}
		emit := pc - 1
		if _, rs, _ := seen.at(as, pc); rs != nil && rs.signal {
			emit = pc
		}
		out = append(out, emit)
	}
	return out, StopMax
}

// places remembers, for one chain, what the address space and the
// tables said of the addresses looked up: each frame asks at its pc
// and at pc-1, and a recursion's frames repeat their return addresses
// (a sort's merge, an interpreter's eval loop), each of them a mapping
// lookup and a binary search of the rows. The answers hold for the
// whole chain: one process at one time. A few slots, direct-mapped by
// address, catch most repeats. When w is set, its knownRows, which hold
// across the chains of an epoch, are asked first.
type places struct {
	w     *Walker
	valid uint32 // bit i: slot i holds addr[i]'s answer
	addr  [numPlaces]uint64
	code  [numPlaces]Code
	rs    [numPlaces]*ruleset
	ok    [numPlaces]bool
}

const numPlaces = 32

// at returns as.Code(addr) and the rows of that code at addr (nil when
// it has no table or no row there).
func (p *places) at(as AddressSpace, addr uint64) (Code, *ruleset, bool) {
	var kept *knownRow
	if p.w != nil {
		if kept = p.w.known.at(addr); kept.holds(p.w.known, addr) {
			return kept.code, kept.rs, kept.ok
		}
	}
	i := (addr ^ addr>>5) % numPlaces
	if p.valid&(1<<i) != 0 && p.addr[i] == addr {
		return p.code[i], p.rs[i], p.ok[i]
	}
	code, rs, ok := rowsAt(as, addr)
	if kept != nil && !code.JIT {
		p.w.known.keep(kept, addr, code, rs, ok)
	}
	p.valid |= 1 << i
	p.addr[i], p.code[i], p.rs[i], p.ok[i] = addr, code, rs, ok
	return code, rs, ok
}

// rowsAt returns as.Code(addr) and the rows of that code at addr.
func rowsAt(as AddressSpace, addr uint64) (Code, *ruleset, bool) {
	code, ok := as.Code(addr)
	var rs *ruleset
	if ok && code.Table != nil {
		rs = code.Table.lookup(addr - code.Bias)
	}
	return code, rs, ok
}

// step computes the caller's registers from rs, in place.
func (f *frame) step(rs *ruleset, t *Table) (bool, Stop) {
	var cfa uint64
	switch rs.cfa.kind {
	case cfaReg:
		v, ok := f.reg(uint64(rs.cfa.reg))
		if !ok {
			return true, StopRule
		}
		cfa = v + uint64(int64(rs.cfa.off))
	case cfaExpr:
		v, ok := f.eval(t.expr(rs.cfa.off), 0, false)
		if !ok {
			return true, StopRule
		}
		cfa = v
	default:
		return true, StopRule
	}
	if rs.regs[regRA].kind == ruleUndefined {
		return true, StopEnd
	}
	var next Regs
	for live := rs.live; live != 0; live &= live - 1 {
		i := bits.TrailingZeros32(live)
		ru := &rs.regs[i]
		var v uint64
		switch ru.kind {
		case ruleSame:
			var ok bool
			if v, ok = f.reg(uint64(i)); !ok {
				continue
			}
		case ruleOffset:
			w, ok := f.stack.word(cfa + uint64(int64(ru.off)))
			if !ok {
				if i == regRA {
					return true, StopStack
				}
				continue
			}
			v = w
		case ruleValOffset:
			v = cfa + uint64(int64(ru.off))
		case ruleRegister:
			var ok bool
			if v, ok = f.reg(uint64(ru.reg)); !ok {
				continue
			}
		case ruleExpr, ruleValExpr:
			a, ok := f.eval(t.expr(ru.off), cfa, true)
			if ok && ru.kind == ruleExpr {
				a, ok = f.stack.word(a)
			}
			if !ok {
				continue
			}
			v = a
		default:
			continue
		}
		next.Set(i, v)
	}
	if next.Valid&(1<<regRA) == 0 {
		return true, StopRule
	}
	sp, ok := next.V[regRSP], next.Valid&(1<<regRSP) != 0
	if !ok {
		return true, StopRule
	}
	// A caller's frame is above its callee's: a stack pointer that does
	// not move up means rules that loop (or a switch of stacks, which a
	// copy of one stack cannot follow anyway). A signal frame's caller
	// may sit anywhere on an alternate stack: the frame limit bounds it.
	if old, _ := f.reg(regRSP); sp <= old && !rs.signal {
		return true, StopLoop
	}
	f.regs = next
	return false, StopEnd
}

// callerSaved are the registers a call may change (rax, rdx, rcx, rsi,
// rdi, r8-r11): a caller's are not known after a step that has no rules
// for them.
const callerSaved = 1<<regRAX | 1<<regRDX | 1<<regRCX | 1<<regRSI | 1<<regRDI | 0xf<<8

// maxScan is how many words above the stack pointer scan looks at.
const maxScan = 8

// scan steps out of JIT code that no data describes and that keeps no
// frame pointer (PyPy's helper stubs, which its loops call to allocate
// or to run a write barrier, keep none) by the first of the few words
// at the top of its frame that is a return address into JIT code a
// handler names: the loop that called it. Only there, and only into
// named code, so that a stale word cannot make a frame of anything else.
func (f *frame) scan(as AddressSpace) (bool, Stop) {
	sp, ok := f.reg(regRSP)
	if !ok {
		return true, StopJIT
	}
	for i := uint64(0); i < maxScan; i++ {
		ra, ok := f.stack.word(sp + 8*i)
		if !ok {
			break
		}
		if c, ok := as.Code(ra - 1); ok && c.JIT && c.Named {
			next := f.regs
			next.Valid &^= callerSaved
			next.Set(regRSP, sp+8*i+8)
			next.Set(regRA, ra)
			f.regs = next
			return false, StopEnd
		}
	}
	return true, StopJIT
}

// framePointer steps through a frame that has no call frame information
// by its frame pointer, as V8's and HotSpot's code keeps one and as
// libunwind (which perf unwinds with) guesses: rbp points at the saved
// rbp, the return address above it. The guess is taken only where the
// frame is plausible: rbp aligned and inside the stack copy above the
// stack pointer (libunwind's test: rbp not below the CFA of the frame
// stepped from), and the return address in executable code.
func (f *frame) framePointer(as AddressSpace, jit bool) (bool, Stop) {
	stop := StopNoInfo
	if jit {
		stop = StopJIT
	}
	bp, okb := f.reg(regRBP)
	sp, oks := f.reg(regRSP)
	if !okb || !oks || bp&7 != 0 || bp < sp {
		return true, stop
	}
	savedBP, ok1 := f.stack.word(bp)
	ra, ok2 := f.stack.word(bp + 8)
	if !ok1 || !ok2 || ra == 0 {
		return true, stop
	}
	if _, ok := as.Code(ra - 1); !ok {
		return true, stop
	}
	// The saved rbp is the caller's, which need not be a frame pointer
	// (ld.so's _dl_call_fini keeps data in it, and calls crtstuff's
	// __do_global_dtors_aux, which has no call frame information but
	// keeps a frame): libunwind checks the frame's own rbp, not the
	// saved one, and so do we. A caller that steps by its frame pointer
	// in turn checks the saved rbp then, against a stack pointer that
	// rose by 16 at least: no loop.
	next := f.regs
	next.Valid &^= callerSaved
	next.Set(regRBP, savedBP)
	next.Set(regRSP, bp+16)
	next.Set(regRA, ra)
	f.regs = next
	return false, StopEnd
}
