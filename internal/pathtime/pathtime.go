package pathtime

import (
	"fmt"
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

// Options choose the accounting policy.
type Options struct {
	// Nested treats an enter inside a region as a call whose time is
	// charged to the caller (the outermost region of the thread).
	Nested bool
	// Merge charges a region's time to another: inner bridges to their loop.
	Merge map[uint64]uint64
	// End is the time to charge open regions up to; 0 means the last event.
	End uint64
}

// Total is the time of one region.
type Total struct {
	Region  uint64
	Time    uint64 // in the events' time unit
	Entries uint64 // times the region was entered (after merging)
	Percent float64
}

// Result is the outcome of Compute.
type Result struct {
	Totals []Total // by descending time, then region
	Total  uint64  // time in all regions
	// Unmatched counts exits of threads that were in no region, which
	// happen when logging started inside a region.
	Unmatched uint64
}

// Compute accounts events, which must be in time order per thread (the
// order of a single thread's log). Threads may interleave.
func Compute(events []Event, opts Options) (*Result, error) {
	type state struct {
		stack []uint64 // regions entered; only the bottom one accrues with Nested
		since uint64
	}
	threads := map[uint64]*state{}
	time := map[uint64]uint64{}
	entries := map[uint64]uint64{}
	res := &Result{}
	var last uint64
	resolve := func(r uint64) uint64 {
		// Merges may chain (bridge of a bridge); bound the walk so a cycle
		// in the caller's table cannot hang us.
		for i := 0; i < 64; i++ {
			m, ok := opts.Merge[r]
			if !ok || m == r {
				return r
			}
			r = m
		}
		return r
	}
	charge := func(s *state, now uint64) error {
		if len(s.stack) == 0 {
			return nil
		}
		if now < s.since {
			return fmt.Errorf("time goes back from %d to %d", s.since, now)
		}
		time[s.stack[0]] += now - s.since
		s.since = now
		return nil
	}
	for i, e := range events {
		s := threads[e.Thread]
		if s == nil {
			s = &state{}
			threads[e.Thread] = s
		}
		if e.Time > last {
			last = e.Time
		}
		if err := charge(s, e.Time); err != nil {
			return nil, fmt.Errorf("event %d, thread %d: %w", i, e.Thread, err)
		}
		s.since = e.Time
		switch {
		case e.Exit && len(s.stack) == 0:
			res.Unmatched++
		case e.Exit && opts.Nested:
			s.stack = s.stack[:len(s.stack)-1]
		case e.Exit:
			s.stack = s.stack[:0]
		case opts.Nested:
			r := resolve(e.Region)
			s.stack = append(s.stack, r)
			entries[r]++
		default:
			r := resolve(e.Region)
			if len(s.stack) == 1 && s.stack[0] == r {
				// An inner bridge merged into its loop jumping back: the
				// loop goes on, it is not entered again.
				continue
			}
			s.stack = append(s.stack[:0], r)
			entries[r]++
		}
	}
	end := opts.End
	if end == 0 {
		end = last
	}
	for id, s := range threads {
		if err := charge(s, end); err != nil {
			return nil, fmt.Errorf("thread %d at the end: %w", id, err)
		}
	}
	for r, t := range time {
		res.Totals = append(res.Totals, Total{Region: r, Time: t, Entries: entries[r]})
		res.Total += t
	}
	for r, n := range entries {
		if _, ok := time[r]; !ok {
			res.Totals = append(res.Totals, Total{Region: r, Entries: n})
		}
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
