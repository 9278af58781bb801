package daemon

import (
	"math"
	"sort"

	"github.com/jitprof/jitprof/internal/jitdump"
	"github.com/jitprof/jitprof/jitlog"
)

// forever is the unload time of code still live.
const forever = math.MaxUint64

// codeEntry is one generation of JIT code at one place: [start, end)
// from load to unload (CLOCK_MONOTONIC ns), seq its sequence number.
type codeEntry struct {
	start, end   uint64
	seq          uint64
	load, unload uint64
}

// codeTable is what the daemon knows of a process's JIT code: every
// generation still live, and those that ended in the last keep
// nanoseconds, so that a sample drained a little after the code it hit
// was replaced still gets that code's sequence number (seed 000: the
// number of the code live at the address when the sample was taken).
type codeTable struct {
	e      []codeEntry // by start, then load
	maxLen uint64      // the longest entry: how far back a lookup looks
	// last is the index of the entry the last lookup found, tried
	// first: samples come in runs in one function.
	last int
}

// load adds a generation of code; live code it overlaps ends at t.
func (c *codeTable) load(start, size, seq, t uint64) {
	if size == 0 || start+size < start {
		return
	}
	end := start + size
	c.endOverlaps(start, end, t)
	i := sort.Search(len(c.e), func(i int) bool {
		return c.e[i].start > start || c.e[i].start == start && c.e[i].load > t
	})
	c.e = append(c.e, codeEntry{})
	copy(c.e[i+1:], c.e[i:])
	c.e[i] = codeEntry{start: start, end: end, seq: seq, load: t, unload: forever}
	c.maxLen = max(c.maxLen, size)
	c.last = 0
}

// endOverlaps ends, at t, the live code that overlaps [start, end).
func (c *codeTable) endOverlaps(start, end, t uint64) {
	i := sort.Search(len(c.e), func(i int) bool { return c.e[i].start >= end })
	for j := i - 1; j >= 0 && c.e[j].start+c.maxLen > start; j-- {
		e := &c.e[j]
		if e.end > start && e.unload == forever {
			e.unload = t
		}
	}
}

// unload ends the live code of generation seq at t; it returns the
// entry's range.
func (c *codeTable) unload(seq, t uint64) (start, size uint64, ok bool) {
	for i := range c.e {
		e := &c.e[i]
		if e.seq == seq && e.unload == forever {
			e.unload = t
			return e.start, e.end - e.start, true
		}
	}
	return 0, 0, false
}

// move moves the live code of generation seq to newStart at t.
func (c *codeTable) move(seq, newStart, t uint64) {
	if _, size, ok := c.unload(seq, t); ok {
		c.load(newStart, size, seq, t)
	}
}

// lookup returns the sequence number of the code at addr at time t: the
// generation live then, or else the latest loaded before t, or else the
// first loaded after it (a sample of code the JIT had not yet logged
// when it was drained).
func (c *codeTable) lookup(addr, t uint64) (uint64, bool) {
	if l := c.last; l < len(c.e) {
		if e := &c.e[l]; e.start <= addr && addr < e.end && e.load <= t && t < e.unload {
			return e.seq, true
		}
	}
	i := sort.Search(len(c.e), func(i int) bool { return c.e[i].start > addr })
	best, bestLoad := -1, uint64(0)
	after, afterLoad := -1, uint64(forever)
	for j := i - 1; j >= 0 && c.e[j].start+c.maxLen > addr; j-- {
		e := &c.e[j]
		if addr >= e.end {
			continue
		}
		if e.load <= t {
			if e.load >= bestLoad || best < 0 {
				best, bestLoad = j, e.load
			}
		} else if e.load < afterLoad {
			after, afterLoad = j, e.load
		}
	}
	switch {
	case best >= 0:
		c.last = best
		return c.e[best].seq, true
	case after >= 0:
		return c.e[after].seq, true
	}
	return 0, false
}

// prune forgets code that ended before t.
func (c *codeTable) prune(t uint64) {
	n := 0
	var longest uint64
	for _, e := range c.e {
		if e.unload >= t {
			c.e[n] = e
			n++
			longest = max(longest, e.end-e.start)
		}
	}
	c.e = c.e[:n]
	c.maxLen = longest
	c.last = 0
}

// jitlogRecord applies what a jitlog record says of code; it reports
// whether the record was about code.
func (c *codeTable) jitlogRecord(r jitlog.Record) bool {
	switch r := r.(type) {
	case *jitlog.LoadRecord:
		c.load(r.Addr, r.Size, r.Seq, r.Time)
	case *jitlog.MoveRecord:
		c.move(r.Seq, r.NewAddr, r.Time)
	case *jitlog.UnloadRecord:
		c.unload(r.Seq, r.Time)
	default:
		return false
	}
	return true
}

// jitdumpRecord applies what a jitdump record says of code.
func (c *codeTable) jitdumpRecord(r jitdump.Record) {
	switch r := r.(type) {
	case *jitdump.CodeLoad:
		c.load(r.CodeAddr, r.CodeSize, r.CodeIndex, r.Timestamp)
	case *jitdump.CodeMove:
		c.move(r.CodeIndex, r.NewCodeAddr, r.Timestamp)
	}
}
