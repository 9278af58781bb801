package perfdatasrc

import (
	"github.com/jitprof/jitprof/internal/unwind"
	"github.com/jitprof/jitprof/perfdata"
)

// A recording made with --call-graph dwarf carries, with each sample,
// the user registers and a copy of the top of the user stack instead of
// the user part of the callchain. The user part is unwound here, before
// the sample reaches the Resolver, and joined after the kernel's
// (unwind.Walker.Callchain, which the sample database's ingest uses too).

// hasStacks reports whether f's samples may carry user stacks to unwind.
func hasStacks(f *perfdata.File) bool {
	for _, a := range f.Attrs {
		if a.SampleType&(perfdata.SampleRegsUser|perfdata.SampleStackUser) == perfdata.SampleRegsUser|perfdata.SampleStackUser {
			return true
		}
	}
	return false
}

// newUnwinder returns the Unwinder of f's samples against tl, or nil
// when they have no stacks or only leaves are wanted.
func newUnwinder(f *perfdata.File, tl *Timeline, opts Options) *unwind.Unwinder {
	if opts.LeafOnly || !hasStacks(f) {
		return nil
	}
	jit, _ := opts.Anon.(unwind.JITInfo)
	return unwind.New(unwind.Options{Symbolizer: opts.Symbolizer, Procs: tl.Tracker, JIT: jit, Cache: true})
}

// stackWalker unwinds the samples one goroutine reads.
type stackWalker struct {
	w     *unwind.Walker
	chain []uint64
}

func newStackWalker(u *unwind.Unwinder) *stackWalker {
	if u == nil {
		return nil
	}
	return &stackWalker{w: u.Walker()}
}

// callchain returns s's callchain with its user part unwound from the
// sample's stack (unwind.Walker.Callchain), or s.Callchain when it has
// none to unwind. The slice is the walker's until the next call.
func (sw *stackWalker) callchain(s *perfdata.Sample) []uint64 {
	chain, _, _ := sw.unwind(s)
	return chain
}

// unwind is callchain, and says how the unwinding stopped and whether
// there was a stack to unwind.
func (sw *stackWalker) unwind(s *perfdata.Sample) ([]uint64, unwind.Stop, bool) {
	if sw == nil {
		return s.Callchain, unwind.StopEnd, false
	}
	chain, stop, ok := sw.w.Callchain(s, sw.chain[:0])
	if !ok {
		return s.Callchain, stop, false
	}
	sw.chain = chain
	return chain, stop, true
}

// flush adds the walker's counts to its Unwinder's.
func (sw *stackWalker) flush() {
	if sw != nil {
		sw.w.Flush()
	}
}
