package pathtime

import (
	"fmt"
	"slices"
	"sort"
)

// Event is one enter or exit of a compiled region by a thread.
type Event struct {
	Time   uint64
	Thread uint64
	// Region is the region entered; ignored for exits.
	Region uint64
	Exit   bool
}

// Sample is a profiler's sample of a thread (perf.data's), joined with
// the events to tell how much of a region's time was spent on a CPU.
type Sample struct {
	Time, Thread uint64
	// Period is what the sample stands for: nanoseconds of CPU time for
	// the cpu-clock and task-clock events.
	Period uint64
	// IP is the sampled address, for Options.InRegion.
	IP uint64
}

// Options choose the accounting policy.
type Options struct {
	// Nested treats an enter inside a region as a call whose time is
	// charged to the caller (the outermost region of the thread).
	Nested bool
	// Merge charges a region's time to another: inner bridges to their loop.
	Merge map[uint64]uint64
	// Calls, when set, says whether entering region callee while in
	// region caller (as merged) is a call whose time is the caller's, as
	// Nested makes every enter: PyPy's call_assembler. Other enters are
	// jumps, the implicit exit of the current region.
	Calls func(caller, callee uint64) bool
	// End is the time to charge open regions up to; 0 means the last event.
	End uint64
	// Samples, in the events' clock, are charged to the region their
	// thread was in when they were taken (Total.Samples, Total.OnCPU);
	// samples taken outside every region are not charged.
	Samples []Sample
	// InRegion, when set, says whether a sampled address is in a region's
	// own code: the samples charged to a region that are (Total.Self),
	// as against those in what it called, the kernel included.
	InRegion func(region, ip uint64) bool
}

// Total is the time of one region.
type Total struct {
	Region  uint64
	Time    uint64 // wall time, in the events' time unit
	Entries uint64 // times the region was entered (after merging)
	Percent float64
	// Samples taken in the region and the sum of their periods (on-CPU
	// time for cpu-clock samples), when Options.Samples were given.
	Samples, OnCPU uint64
	// Self counts the Samples in the region's own code (Options.InRegion).
	Self uint64
}

// Result is the outcome of Compute.
type Result struct {
	Totals []Total // by descending time, then region
	Total  uint64  // time in all regions
	// Unmatched counts exits of threads that were in no region, which
	// happen when logging started inside a region.
	Unmatched uint64
	// Samples and OnCPU are the totals of the regions'.
	Samples, OnCPU uint64
}

// An Accountant accounts events one at a time, in constant memory per
// thread and region, so that a log of any size can be read as a stream.
// Events must be in time order per thread (the order of a single
// thread's log); threads may interleave.
type Accountant struct {
	opts    Options
	threads map[uint64]*thread
	time    map[uint64]uint64
	entries map[uint64]uint64
	samples map[uint64]uint64
	onCPU   map[uint64]uint64
	self    map[uint64]uint64
	unmatch uint64
	last    uint64
	n       int
	// pending are the samples not yet charged, by thread, in time order.
	pending map[uint64][]Sample
}

type thread struct {
	stack []uint64 // regions entered; only the bottom one accrues with Nested
	since uint64
}

// NewAccountant returns an Accountant with opts' policy.
func NewAccountant(opts Options) *Accountant {
	a := &Accountant{opts: opts, threads: map[uint64]*thread{}, time: map[uint64]uint64{}, entries: map[uint64]uint64{},
		samples: map[uint64]uint64{}, onCPU: map[uint64]uint64{}, self: map[uint64]uint64{}, pending: map[uint64][]Sample{}}
	for _, s := range opts.Samples {
		a.pending[s.Thread] = append(a.pending[s.Thread], s)
	}
	for _, ss := range a.pending {
		slices.SortStableFunc(ss, func(x, y Sample) int {
			switch {
			case x.Time < y.Time:
				return -1
			case x.Time > y.Time:
				return 1
			}
			return 0
		})
	}
	return a
}

// region follows Options.Merge from r.
func (a *Accountant) region(r uint64) uint64 {
	// Merges may chain (bridge of a bridge); bound the walk so a cycle
	// in the caller's table cannot hang us.
	for i := 0; i < 64; i++ {
		m, ok := a.opts.Merge[r]
		if !ok || m == r {
			return r
		}
		r = m
	}
	return r
}

// charge charges thread id's time, and its samples, from s.since up to
// now to the region it is in.
func (a *Accountant) charge(id uint64, s *thread, now uint64) error {
	if now < s.since && len(s.stack) > 0 {
		return fmt.Errorf("time goes back from %d to %d", s.since, now)
	}
	ss := a.pending[id]
	i := 0
	for ; i < len(ss) && ss[i].Time < now; i++ {
		if len(s.stack) > 0 && ss[i].Time >= s.since {
			r := s.stack[0]
			a.samples[r]++
			a.onCPU[r] += ss[i].Period
			if a.opts.InRegion != nil && a.opts.InRegion(r, ss[i].IP) {
				a.self[r]++
			}
		}
	}
	if i > 0 {
		a.pending[id] = ss[i:]
	}
	if len(s.stack) > 0 {
		a.time[s.stack[0]] += now - s.since
	}
	// Outside every region nothing is charged: a step back there is
	// harmless.
	s.since = now
	return nil
}

// Add accounts the next event.
func (a *Accountant) Add(e Event) error {
	n := a.n
	a.n++
	s := a.threads[e.Thread]
	if s == nil {
		s = &thread{since: e.Time}
		a.threads[e.Thread] = s
	}
	a.last = max(a.last, e.Time)
	if err := a.charge(e.Thread, s, e.Time); err != nil {
		return fmt.Errorf("event %d, thread %d: %w", n, e.Thread, err)
	}
	switch {
	case e.Exit && len(s.stack) == 0:
		a.unmatch++
	case e.Exit && (a.opts.Nested || len(s.stack) > 1):
		// The end of a call: back to the caller.
		s.stack = s.stack[:len(s.stack)-1]
	case e.Exit:
		s.stack = s.stack[:0]
	case a.opts.Nested && len(s.stack) > 0, len(s.stack) > 0 && a.opts.Calls != nil && a.opts.Calls(s.stack[len(s.stack)-1], e.Region):
		r := a.region(e.Region)
		s.stack = append(s.stack, r)
		a.entries[r]++
	default:
		r := a.region(e.Region)
		if n := len(s.stack); n > 0 && s.stack[n-1] == r {
			// An inner bridge merged into its loop jumping back: the
			// loop goes on, it is not entered again.
			return nil
		}
		// A jump: the implicit exit of the current region (of the
		// callee, inside a call).
		if n := len(s.stack); n > 0 {
			s.stack = s.stack[:n-1]
		}
		s.stack = append(s.stack, r)
		a.entries[r]++
	}
	return nil
}

// Result charges the regions still open up to Options.End (or the last
// event) and returns the totals. The Accountant is done with then.
func (a *Accountant) Result() (*Result, error) {
	end := a.opts.End
	if end == 0 {
		end = a.last
	}
	ids := make([]uint64, 0, len(a.threads))
	for id := range a.threads {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := a.charge(id, a.threads[id], end); err != nil {
			return nil, fmt.Errorf("thread %d at the end: %w", id, err)
		}
	}
	res := &Result{Unmatched: a.unmatch}
	seen := map[uint64]bool{}
	for _, m := range []map[uint64]uint64{a.time, a.entries, a.samples} {
		for r := range m {
			if !seen[r] {
				seen[r] = true
				res.Totals = append(res.Totals, Total{Region: r, Time: a.time[r], Entries: a.entries[r], Samples: a.samples[r], OnCPU: a.onCPU[r], Self: a.self[r]})
			}
		}
	}
	for _, t := range res.Totals {
		res.Total += t.Time
		res.Samples += t.Samples
		res.OnCPU += t.OnCPU
	}
	for i := range res.Totals {
		if res.Total > 0 {
			res.Totals[i].Percent = 100 * float64(res.Totals[i].Time) / float64(res.Total)
		}
	}
	sort.Slice(res.Totals, func(i, j int) bool {
		a, b := res.Totals[i], res.Totals[j]
		if a.Time != b.Time {
			return a.Time > b.Time
		}
		return a.Region < b.Region
	})
	return res, nil
}

// Compute accounts events, which must be in time order per thread, with
// an Accountant.
func Compute(events []Event, opts Options) (*Result, error) {
	a := NewAccountant(opts)
	for _, e := range events {
		if err := a.Add(e); err != nil {
			return nil, err
		}
	}
	return a.Result()
}
