package perfdatasrc

import (
	"slices"

	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/unwind"
	"github.com/jitprof/jitprof/perfdata"
)

// A recording with user stacks (--call-graph dwarf) is mostly the
// stacks' bytes: a million samples of 8 KiB stacks are 12 GB, and
// copying them from the system's cache was half of a report's time when
// the file was read twice (the timeline's pass, then the samples'). So
// loadOnePass reads such a file once, as perf report does: it takes the
// timeline's records as they come, unwinds each sample against the
// mappings told of so far, and resolves it once it is window samples
// old, in file order, as loadChunk would have.
//
// The Tracker's answer at a time depends only on the records of that
// time or before, so a sample unwound and resolved that way has the
// stack the two passes give when no record read after it changes the
// processes at its time. perf writes each CPU's buffer in time order, a
// round at a time, so a record comes after samples of later times only
// when another CPU's buffer was written first: a process's exec or mmap
// on one CPU, samples of any process on another, within a round or two.
// A record whose time is not after every sample read marks the samples
// of its time or later in the window to be unwound again, from the file,
// before they are resolved; one that reaches a sample already resolved
// sends the file the two-pass way.
//
// The samples are resolved before the whole timeline is known. Without
// JIT handlers (a report without --anon-samples) JIT code is left in
// OProfile's anon buckets, whatever the timeline. The JIT handlers,
// which the unwinder and the Resolver ask about anonymous executable
// memory, choose by the recorded processes: by a process's
// last command name (its JIT image is named "[JIT jitdump] node") and
// by its mappings over the whole recording (jitdump's marker mapping,
// PyPy's JIT memory, which its log's loops must lie in; an external
// handler is sent them all). So the handlers are bound early
// (Options.BindEarly, internal/anonbind): a process is claimed at its
// first JIT address by what the timeline says of it so far, and once
// the timeline is read the claims are checked (EarlyAnon.Settled)
// against what the handlers read of the whole timeline (anon.TimelineKey;
// also every settleEvery bytes, to give up early): a record that
// changed it (a rename after the first JIT sample, a PyPy process
// mapping more JIT memory) sends the file the two-pass way, where the
// handlers claim with the whole timeline. In recordings of Node (perf
// record of node --perf-prof), PyPy and minijit (jitprof record) the
// JIT process mapped no executable memory and was not renamed after its
// first JIT sample (its later mappings, 451 in Node's, were of data,
// which no handler reads). Handlers that cannot be bound early (an
// external handler) send a recording with JIT code the two-pass way; an
// image found only in a process that still runs (Options.Live, which
// says who each process was by the whole timeline), any recording.

// EarlyAnon names JIT code for a DWARF recording read in one pass
// (Options.BindEarly): an AnonResolver and the unwinder's JITInfo whose
// handlers claim processes while the timeline is read, and Settled
// reports whether every claim made so far is the one the timeline read
// so far gives (anonbind.Binder).
type EarlyAnon interface {
	resolve.AnonResolver
	unwind.JITInfo
	Settled() bool
}

// window is how many samples wait to be resolved: the reach of a late
// record, a round or two of perf's buffers (each CPU's holds a few
// hundred samples of 8 KiB stacks).
const window = 1 << 14

// onePassOK reports whether load tries loadOnePass for f: a file, whole
// (a killed one may stop at a torn record, and its warning would be
// given twice), with stacks to unwind, not read for leaves only.
func onePassOK(f *perfdata.File, opts Options) bool {
	return !f.Pipe && !f.Truncated && !opts.LeafOnly && opts.Timeline == nil && hasStacks(f)
}

// onePass is what loadOnePass keeps while it reads: the samples that
// wait to be resolved, in a ring.
type onePass struct {
	// ring grows by doubling, up to window samples: a small recording
	// (or a fuzz input, loaded several times) would otherwise clear
	// megabytes for a few samples, most of its load's time.
	ring  []waiting
	first int // the oldest in ring
	n     int // how many wait
	// latest is the latest time of the samples read; resolved that of
	// those resolved: a record of that time or before gives up.
	latest, resolved uint64
	some             bool // a sample was resolved
	redone           int  // samples unwound again
	// unborn are samples whose process had not begun at their time
	// when they were to be resolved (process.Tracker.Unborn): a record
	// of any later time may still begin it, so they are unwound again
	// and resolved once the whole file is read.
	unborn []waiting
	// early names JIT code while the timeline is read; nil when the
	// JIT handlers could not be bound early.
	early EarlyAnon
	// bindLate says the JIT handlers are bound by the whole timeline
	// (Options.Bind without early): JIT code gives the one pass up.
	bindLate bool
	// told says the timeline took a record since early was last asked
	// whether its claims hold, at checked, an offset in the file.
	told    bool
	checked int64
}

// settleEvery is how many bytes of records the one pass reads between
// the times it asks whether the claims of the handlers bound early
// hold, besides once at the end, which alone decides: asking reads a
// claimed process's mappings again, and Node maps data every few
// samples (451 times in a recording of 1,985). A claim that no longer
// holds gives the pass up within settleEvery bytes.
const settleEvery = 4 << 20

// settled reports whether the claims of the handlers bound early hold,
// asking them when the timeline took a record since they were last
// asked, at off, and always when final.
func (op *onePass) settled(off int64, final bool) bool {
	if op.early == nil || !op.told || !final && off-op.checked < settleEvery {
		return true
	}
	op.told, op.checked = false, off
	return op.early.Settled()
}

// waiting is a sample that waits to be resolved, with its chain, its
// offset (to read it again) and how its unwinding stopped.
type waiting struct {
	s     resolve.Sample
	chain []uint64 // s.Callchain's words, kept
	off   int64
	stop  unwind.Stop
	stack bool // it had a stack, unwound
	late  bool // to unwind again
}

// keep returns a copy of w that keeps its chain past the ring slot's
// reuse.
func (w *waiting) keep() waiting {
	k := *w
	k.chain = slices.Clone(w.chain)
	k.s.Callchain = k.chain
	return k
}

// take gives tl a record other than a sample, marking the samples it
// makes late. It reports false when the file is to be read the
// two-pass way: the record reaches a sample already resolved, or tells
// of JIT code to be named by handlers bound by the whole timeline.
func (op *onePass) take(tl *Timeline, rec perfdata.Record) bool {
	switch rec.(type) {
	case *perfdata.Lost, *perfdata.LostSamples:
		tl.take(rec) // counted, not a change of the processes
		return true
	}
	if !takes(rec) {
		return true
	}
	tm := recordTime(rec)
	if op.some && tm <= op.resolved {
		return false
	}
	if op.n > 0 && tm <= op.latest {
		for i := range op.n {
			w := &op.ring[(op.first+i)%len(op.ring)]
			if w.stack && w.s.Time >= tm {
				w.late = true
			}
		}
	}
	tl.take(rec)
	op.told = true
	return !op.bindLate || !tl.anonCode
}

// recordTime is the time at which the Tracker takes rec (process.Take).
func recordTime(rec perfdata.Record) uint64 {
	if r, ok := rec.(*perfdata.Fork); ok && r.Timestamp() == 0 {
		return r.ForkTime
	}
	return rec.Base().Timestamp()
}

// hold keeps sample s, read at off, unwound to chain (stack: it had one
// to unwind), to be resolved; the ring must have room.
func (op *onePass) hold(tl *Timeline, s *perfdata.Sample, off int64, events *eventIndex, chain []uint64, stop unwind.Stop, stack bool) {
	if op.n == len(op.ring) {
		op.grow()
	}
	w := &op.ring[(op.first+op.n)%len(op.ring)]
	op.n++
	toSample(s, events, &w.s)
	w.chain = append(w.chain[:0], chain...)
	w.s.Callchain = w.chain
	w.off, w.stop, w.stack, w.late = off, stop, stack, false
	op.latest = max(op.latest, w.s.Time)
	if stack && tl.Tracker.Unborn(w.s.PID, w.s.Time) {
		// Unwound in a process not begun yet: the record that
		// begins it may come at a later time, which marks nothing.
		w.late = true
	}
}

// grow doubles the ring, its waiting samples first in their order.
func (op *onePass) grow() {
	ring := make([]waiting, max(64, min(2*len(op.ring), window)))
	for i := range op.n {
		ring[i] = op.ring[(op.first+i)%len(op.ring)]
	}
	op.ring, op.first = ring, 0
}

// oldest takes the oldest waiting sample out of the ring; it is valid
// until the next hold.
func (op *onePass) oldest() *waiting {
	w := &op.ring[op.first]
	op.first = (op.first + 1) % len(op.ring)
	op.n--
	op.resolved, op.some = max(op.resolved, w.s.Time), true
	return w
}

// loadOnePass is load for onePassOK files. It returns false, having
// read no more than it must, when the file is to be read the two-pass
// way: it has JIT code its handlers cannot name early or an image only
// a live process has, a record reaches a sample already resolved, or a
// record cannot be read (the two passes then report it as they always
// have). An error is opts.BindEarly's or opts.Bind's, which are not
// asked again.
func loadOnePass(f *perfdata.File, opts Options) (*profile.Profile, bool, error) {
	return new(onePass).load(f, opts)
}

func (op *onePass) load(f *perfdata.File, opts Options) (*profile.Profile, bool, error) {
	tl := newTimeline(f)
	// JIT code is named by handlers bound early, or by handlers that do
	// not depend on the timeline (opts.Anon without Bind), or not at all.
	uopts := unwind.Options{Symbolizer: opts.Symbolizer, Procs: tl.Tracker, Cache: true}
	uopts.JIT, _ = opts.Anon.(unwind.JITInfo)
	ropts := opts
	if opts.BindEarly != nil {
		var err error
		if op.early, err = opts.BindEarly(tl); err != nil {
			return nil, true, err
		}
		if op.early != nil {
			uopts.JIT, ropts.Anon = op.early, op.early
		}
	}
	if op.early == nil && opts.Bind != nil {
		op.bindLate = true
		uopts.JIT, ropts.Anon = nil, nil // bound after the samples: asked of none
	}
	u := unwind.New(uopts)
	sw := newStackWalker(u)
	liveAsked := false
	if opts.Live != nil {
		ropts.Live = func(*Timeline) func(uint32) (symbolize.Place, bool) {
			return func(uint32) (symbolize.Place, bool) {
				liveAsked = true
				return symbolize.Place{}, false
			}
		}
	}
	res, b, events := newResolver(f, tl, ropts)
	meta := b.Meta()
	again := f.RecordsIn(perfdata.Chunk{Start: f.DataOffset, End: f.DataOffset + f.DataSize})
	again.Sequential = true
	// unwindAgain unwinds w's sample again, read anew from the file.
	unwindAgain := func(w *waiting) bool {
		again.JumpTo(w.off)
		if !again.Next() {
			return false // read once already: it cannot fail now
		}
		s, ok := again.Record().(*perfdata.Sample)
		if !ok {
			return false
		}
		sw.w.Uncount(w.stop)
		chain, stop, _ := sw.unwind(s)
		w.chain = append(w.chain[:0], chain...)
		w.s.Callchain, w.stop = w.chain, stop
		op.redone++
		return true
	}
	// add resolves w's sample into the profile.
	add := func(w *waiting) bool {
		widen(meta, w.s.Time)
		res.Add(&w.s)
		return !liveAsked
	}
	resolveOldest := func() bool {
		w := op.oldest()
		if tl.Tracker.Unborn(w.s.PID, w.s.Time) {
			op.unborn = append(op.unborn, w.keep())
			return true
		}
		if w.late && !unwindAgain(w) {
			return false
		}
		return add(w)
	}
	total := f.DataSize
	r := f.Records()
	r.Sequential = true // a sample is unwound before the next is read
	rel := releaser{f: f, at: f.DataOffset}
	for n := 0; r.Next(); n++ {
		off := r.Offset()
		if s, ok := r.Record().(*perfdata.Sample); ok {
			if op.n == window && !resolveOldest() {
				return nil, false, nil
			}
			chain, stop, stack := sw.unwind(s)
			op.hold(tl, s, off, events, chain, stop, stack)
		} else if !op.take(tl, r.Record()) || !op.settled(off, false) {
			return nil, false, nil
		}
		rel.readTo(r.NextOffset())
		if opts.Progress != nil && n&0xffff == 0 {
			opts.Progress(off-f.DataOffset, total)
		}
	}
	if r.Err() != nil || !op.settled(r.NextOffset(), true) {
		return nil, false, nil
	}
	rel.finish(f.DataOffset + f.DataSize)
	tl.Tracker.Settle()
	for op.n > 0 {
		if !resolveOldest() {
			return nil, false, nil
		}
	}
	for i := range op.unborn {
		w := &op.unborn[i]
		if w.stack && !unwindAgain(w) || !add(w) {
			return nil, false, nil
		}
	}
	sw.flush()
	if op.early == nil && opts.Bind != nil {
		var err error
		if opts.Anon, err = opts.Bind(tl); err != nil {
			return nil, true, err
		}
	}
	return finishProfile(f, b, tl, u, opts, total), true, nil
}
