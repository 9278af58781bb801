package unwind

import "github.com/jitprof/jitprof/perfdata"

// A recording made with --call-graph dwarf carries, with each sample,
// the user registers and a copy of the top of the user stack instead of
// the user part of the callchain; the kernel's part is still in the
// callchain. Callchain unwinds the user part and joins it after the
// kernel's as perf joins them (thread__resolve_callchain in callee
// order): the kernel frames, then the user frames from the sampled user
// pc up. A report (internal/perfdatasrc) and the sample database's ingest
// (internal/ingest) both take their chains from it.

// HasStack reports whether s carries user registers and a user stack to
// unwind. The copy may be empty (its size 0: the kernel could not read
// the stack, as in a sample of execve after the old image is gone).
func HasStack(s *perfdata.Sample) bool {
	return s.RegsUserABI != 0 && len(s.RegsUser) > 0 && s.Attr != nil && s.Attr.SampleType&perfdata.SampleStackUser != 0
}

// Callchain appends to out s's callchain with its user part unwound from
// the sample's stack: the kernel's part as the sample has it, then
// perfdata.CallchainUser and the user frames, the sampled user pc first.
// It returns out as it was and false when s has no stack to unwind.
func (w *Walker) Callchain(s *perfdata.Sample, out []uint64) ([]uint64, Stop, bool) {
	if !HasStack(s) {
		return out, StopEnd, false
	}
	for _, ip := range s.Callchain {
		if ip == perfdata.CallchainUser {
			break
		}
		out = append(out, ip)
	}
	n := min(s.StackDyn, uint64(len(s.StackUser)))
	if n == 0 {
		// Nothing of the stack was copied: no user part, as perf
		// (thread__resolve_callchain_unwind) has none. The registers
		// are then those of an image that may be gone: execve's
		// samples have the old program's pc, in no mapping the
		// recording told of.
		w.stats.Chains++
		w.stats.Stops[StopStack]++
		return out, StopStack, true
	}
	regs := PerfRegs(s.Attr.SampleRegsUser, s.RegsUser)
	stack := Stack{Data: s.StackUser[:n], Addr: regs.V[RegSP]}
	out = append(out, perfdata.CallchainUser)
	out, stop := w.Unwind(s.PID, s.Timestamp(), regs, &stack, out)
	return out, stop, true
}

// JITTable compiles the .eh_frame a JIT logged for code of codeSize
// bytes (jitdump's CODE_UNWINDING_INFO, V8's --perf-prof-unwinding-info;
// jitlog's unwind record), with addresses relative to the code's start,
// or returns nil when it has none or none that reads. Both formats lay
// the .eh_frame out as perf inject --jit lays it out in the ELF file it
// writes (genelf.c): at the first 8-byte boundary after the code, which
// is what its pc-relative addresses count from.
func JITTable(ehFrame []byte, codeSize uint64) *Table {
	if len(ehFrame) == 0 || codeSize > 1<<40 {
		return nil
	}
	t, _ := Build(Section{Data: ehFrame, Addr: (codeSize + 7) &^ 7}, Section{})
	if t == nil || t.NumRows() == 0 {
		return nil
	}
	return t
}
