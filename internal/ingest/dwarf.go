package ingest

import (
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/internal/unwind"
	"github.com/jitprof/jitprof/perfdata"
)

// Samples recorded with --call-graph dwarf carry the user registers and
// a copy of the top of the user stack instead of the user part of the
// callchain. With Ingest.Unwind they are unwound as they are counted,
// by the unwinder a report uses (internal/unwind: the images' .eh_frame
// and .debug_frame, cached per build-id in jitprof's cache directory,
// and the JIT code's unwinding information), into the chain a report
// unwinds (unwind.Walker.Callchain: the kernel's part, then the user's),
// whose arcs go into {cg} files as a frame-pointer chain's do. The
// stacks themselves are not kept past the round.
//
// JIT code is unwound as a report unwinds it: by the unwinding
// information its JIT logged (jitdump's CODE_UNWINDING_INFO, jitlog's
// unwind records), read with the JIT data the process's code table
// follows; by a frame-pointer step where the frame is plausible; else
// the chain stops there, counted in UnwindStats.

// unwinding is the unwinder of an Ingest, made at its first stack.
type unwinding struct {
	sym   *symbolize.Symbolizer
	u     *unwind.Unwinder
	w     *unwind.Walker
	chain []uint64
	// past counts the chains of the unwinders let go of (bounds.go);
	// told those the session was told of.
	past, told unwind.Stats
}

// unwindChain returns s's callchain with its user part unwound from its
// stack; the slice is the Ingest's until the next call.
func (in *Ingest) unwindChain(s *perfdata.Sample) []uint64 {
	uw := &in.unwinding
	if uw.u == nil {
		if uw.sym == nil {
			uw.sym = symbolize.New(symbolize.Options{SymbolCache: true})
		}
		uw.u = unwind.New(unwind.Options{Symbolizer: uw.sym, Procs: in.procs, JIT: jitTables{in}, Cache: true, Cred: in.cred})
		uw.w = uw.u.Walker()
	}
	chain, _, ok := uw.w.Callchain(s, uw.chain[:0])
	if !ok {
		return s.Callchain
	}
	uw.chain = chain
	return chain
}

// boundUnwinder adds the round's counts to the unwinder's and the
// session's, and lets the unwinder go when the tables and mappings it
// keeps pass their bounds.
func (in *Ingest) boundUnwinder() {
	uw := &in.unwinding
	if uw.u == nil {
		return
	}
	uw.w.Flush()
	st := in.UnwindStats()
	in.db.AddUnwound(st.Chains-uw.told.Chains, st.Stops[unwind.StopJIT]-uw.told.Stops[unwind.StopJIT])
	uw.told = st
	_, held := uw.u.Held()
	if held <= maxImageTables && uw.w.Mappings() <= maxImageMappings {
		return
	}
	cur := uw.u.Stats()
	uw.past.Chains += cur.Chains
	for i, n := range cur.Stops {
		uw.past.Stops[i] += n
	}
	uw.u, uw.w = nil, nil
	uw.sym.ForgetImages()
}

// UnwindStats counts the chains unwound from user stacks, by how they
// ended (unwind.StopJIT: in JIT code without unwinding information or a
// plausible frame pointer), as of the last round.
func (in *Ingest) UnwindStats() unwind.Stats {
	uw := &in.unwinding
	st := uw.past
	if uw.u != nil {
		cur := uw.u.Stats()
		st.Chains += cur.Chains
		for i, n := range cur.Stops {
			st.Stops[i] += n
		}
	}
	return st
}

// cred is whose rights the images process pid mapped are read with:
// the recording's user's (a report's) for Import; for the daemon, which
// runs as root, the process's own filesystem ids as /proc says them when
// its first stack is unwound (after each exec, which begins a new
// pidState), or nobody's when it is gone already.
func (in *Ingest) cred(pid uint32) trust.Cred {
	if in.embedded != nil {
		return trust.Unknown
	}
	st := in.pid(pid)
	if !st.credSet {
		st.credSet, st.cred = true, trust.Nobody
		if id, err := linux.Host.Identity(int(pid)); err == nil {
			st.cred = trust.Cred{UID: id.UID, GID: id.GID}
		}
	}
	return st.cred
}

// jitTables is the unwind.JITInfo of the code tables the Ingest follows.
type jitTables struct{ in *Ingest }

func (j jitTables) code(pid uint32, addr, t uint64) *codeEntry {
	st := j.in.pids[pid]
	if st == nil || st.jit.handler == "" {
		return nil
	}
	return st.jit.code.find(addr, t)
}

// UnwindTable implements unwind.JITInfo: the unwinding information the
// JIT logged for the code at addr at time t, relative to the code's
// start.
func (j jitTables) UnwindTable(pid uint32, addr, t uint64) (*unwind.Table, uint64, bool) {
	e := j.code(pid, addr, t)
	if e == nil || e.unwind == nil {
		return nil, 0, false
	}
	return e.unwind, e.start, true
}

// Named implements unwind.JITInfo: whether the process's JIT data names
// the code at addr at time t.
func (j jitTables) Named(pid uint32, addr, t uint64) bool {
	return j.code(pid, addr, t) != nil
}
