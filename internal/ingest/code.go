package ingest

import (
	"math"

	"github.com/google/btree"

	"github.com/jitprof/jitprof/internal/jitdump"
	"github.com/jitprof/jitprof/internal/unwind"
	"github.com/jitprof/jitprof/jitlog"
)

// forever is the unload time of code still live.
const forever = math.MaxUint64

// Bounds of one process's code table. A JIT's data is its user's to
// write: without them a jitdump of 2 million loads at one address would
// hold 2 million generations, and a lookup in it would scan them.
const (
	// maxEnded bounds the generations kept after they ended: a sample
	// drained a round after its code was replaced needs one or two;
	// beyond the bound the oldest are forgotten first.
	maxEnded = 1 << 15
	// maxScan bounds the ended generations one lookup looks at past the
	// first that could answer it at each start address: generations of
	// other sizes at one start, or many starts below the address. A
	// sample there may get a neighbouring generation's number.
	maxScan = 256
)

// codeEntry is one generation of JIT code at one place: [start, end)
// from load to unload (CLOCK_MONOTONIC ns), seq its sequence number.
type codeEntry struct {
	start, end   uint64
	seq          uint64
	load, unload uint64
	id           uint64 // the order of loads: ties at one start
	// unwind is the code's call frame information, from the JIT's
	// unwinding record (kept only when the table's tables are wanted).
	unwind *unwind.Table
}

// codeTable is what the daemon knows of a process's JIT code: every
// generation still live, and those that ended in the last keepEnded
// (at most maxEnded of them), so that a sample drained a little after
// the code it hit was replaced still gets that code's sequence number
// (seed 000: the number of the code live at the address when the sample
// was taken).
//
// Live code never overlaps (a load ends the live code it overlaps), so
// the live generations are a tree by start address and the generation
// live at an address is found in O(log n); so is every load, move and
// unload. Ended generations are a second tree, by start and load time,
// looked in only for samples older than the live code at their address:
// at each start address, the generation loaded last before the sample
// is found in O(log n) too.
type codeTable struct {
	live  *btree.BTreeG[*codeEntry] // by start
	bySeq map[uint64]*codeEntry     // live code by sequence number
	ended *btree.BTreeG[*codeEntry] // by start, load, id
	// endedQ are the ended generations in the order they ended: the
	// oldest are forgotten first (prune, maxEnded).
	endedQ []*codeEntry
	// endedLen is the longest ended generation: how far below an
	// address a lookup of ended code looks.
	endedLen uint64
	nextID   uint64
	// last is the entry the last lookup found, tried first: samples
	// come in runs in one function.
	last  *codeEntry
	probe codeEntry // a search key, kept to not allocate one per lookup
	// limit bounds the generations kept, live and ended (0: no bound):
	// ended ones are forgotten first; full says a load was refused.
	limit int
	full  bool

	// Unwinding information, kept while tableLimit leaves room (samples
	// with user stacks are unwound; 0 otherwise): a jitdump's comes
	// before its code's load (nextEH, a copy until then); tableBytes is
	// what the code's tables take, at most tableLimit, past which code
	// gets none.
	nextEH     []byte
	tableBytes int64
	tableLimit int64
	tablesFull bool // a table was left out at tableLimit
}

func byStart(a, b *codeEntry) bool { return a.start < b.start }

func byStartLoad(a, b *codeEntry) bool {
	if a.start != b.start {
		return a.start < b.start
	}
	if a.load != b.load {
		return a.load < b.load
	}
	return a.id < b.id
}

func (c *codeTable) init() {
	if c.live == nil {
		c.live = btree.NewG(32, byStart)
		c.ended = btree.NewG(32, byStartLoad)
		c.bySeq = map[uint64]*codeEntry{}
	}
}

// len is how many generations the table holds, live and ended.
func (c *codeTable) len() int {
	if c.live == nil {
		return 0
	}
	return c.live.Len() + c.ended.Len()
}

// load adds a generation of code; live code it overlaps ends at t. It
// reports false when the table is full (limit).
func (c *codeTable) load(start, size, seq, t uint64) bool {
	if size == 0 || start+size < start {
		return true
	}
	c.init()
	end := start + size
	c.endOverlaps(start, end, t)
	for c.limit > 0 && c.len() >= c.limit && c.ended.Len() > 0 {
		c.forgetOldest()
	}
	if c.limit > 0 && c.len() >= c.limit {
		c.full = true
		return false
	}
	c.nextID++
	e := &codeEntry{start: start, end: end, seq: seq, load: t, unload: forever, id: c.nextID}
	c.live.ReplaceOrInsert(e)
	c.bySeq[seq] = e
	return true
}

// endOverlaps ends, at t, the live code that overlaps [start, end).
// Live code does not overlap, so walking down from end it is a run of
// entries that stops at the first one ending at or before start: each
// entry is ended once, so a load costs O(log n) amortized.
func (c *codeTable) endOverlaps(start, end, t uint64) {
	c.probe = codeEntry{start: end - 1}
	var over []*codeEntry
	c.live.DescendLessOrEqual(&c.probe, func(e *codeEntry) bool {
		if e.end <= start {
			return false
		}
		over = append(over, e)
		return true
	})
	for _, e := range over {
		c.end(e, t)
	}
}

// end moves a live entry to the ended ones.
func (c *codeTable) end(e *codeEntry, t uint64) {
	c.live.Delete(e)
	if c.bySeq[e.seq] == e {
		delete(c.bySeq, e.seq)
	}
	e.unload = t
	c.ended.ReplaceOrInsert(e)
	c.endedQ = append(c.endedQ, e)
	c.endedLen = max(c.endedLen, e.end-e.start)
	for c.ended.Len() > maxEnded {
		c.forgetOldest()
	}
}

// forgetOldest forgets the generation that ended first.
func (c *codeTable) forgetOldest() {
	e := c.endedQ[0]
	c.endedQ[0] = nil
	c.endedQ = c.endedQ[1:]
	c.ended.Delete(e)
	if e.unwind != nil {
		c.tableBytes -= e.unwind.Size()
	}
	if c.last == e {
		c.last = nil
	}
	if c.ended.Len() == 0 {
		c.endedLen = 0
	}
}

// unload ends the live code of generation seq at t; it returns the
// entry's range.
func (c *codeTable) unload(seq, t uint64) (start, size uint64, ok bool) {
	e := c.bySeq[seq]
	if e == nil {
		return 0, 0, false
	}
	c.end(e, t)
	return e.start, e.end - e.start, true
}

// move moves the live code of generation seq to newStart at t.
func (c *codeTable) move(seq, newStart, t uint64) {
	old := c.bySeq[seq]
	if _, size, ok := c.unload(seq, t); ok && c.load(newStart, size, seq, t) && old.unwind != nil {
		// Its unwinding information is relative to its start: it
		// moves with the code.
		c.bySeq[seq].unwind, old.unwind = old.unwind, nil
	}
}

// lookup returns the sequence number of the code at addr at time t: the
// generation live then, or else the latest loaded before t, or else the
// first loaded after it (a sample of code the JIT had not yet logged
// when it was drained).
func (c *codeTable) lookup(addr, t uint64) (uint64, bool) {
	if e := c.find(addr, t); e != nil {
		return e.seq, true
	}
	return 0, false
}

// find returns the generation lookup answers with, nil when none.
func (c *codeTable) find(addr, t uint64) *codeEntry {
	if e := c.last; e != nil && e.start <= addr && addr < e.end && e.load <= t && t < e.unload {
		return e
	}
	if c.live == nil {
		return nil
	}
	// The live code at addr, if any, is the last generation loaded
	// there: it answers every sample taken since its load.
	var l *codeEntry
	c.probe = codeEntry{start: addr}
	c.live.DescendLessOrEqual(&c.probe, func(e *codeEntry) bool {
		if addr < e.end {
			l = e
		}
		return false
	})
	if l != nil && l.load <= t {
		c.last = l
		return l
	}
	// An older sample: the latest generation loaded by t among the
	// ended ones that hold addr, or else the first loaded after t, the
	// live one included; start address by start address, down from
	// addr as far as the longest ended generation reaches.
	var best, after *codeEntry
	if l != nil {
		after = l
	}
	budget := maxScan
	hi := addr // the starts left to look at are at most hi
	for budget > 0 {
		var at uint64
		found := false
		c.probe = codeEntry{start: hi, load: forever, id: math.MaxUint64}
		c.ended.DescendLessOrEqual(&c.probe, func(e *codeEntry) bool {
			at, found = e.start, true
			return false
		})
		if !found || at+c.endedLen <= addr {
			break
		}
		c.probe = codeEntry{start: at, load: t, id: math.MaxUint64}
		c.ended.DescendLessOrEqual(&c.probe, func(e *codeEntry) bool {
			if e.start != at || budget <= 0 {
				return false
			}
			budget--
			if addr < e.end {
				if best == nil || e.load > best.load {
					best = e
				}
				return false
			}
			return true // a shorter generation at this start
		})
		if t < forever {
			c.probe = codeEntry{start: at, load: t + 1}
			c.ended.AscendGreaterOrEqual(&c.probe, func(e *codeEntry) bool {
				if e.start != at || budget <= 0 {
					return false
				}
				budget--
				if addr < e.end {
					if after == nil || e.load < after.load {
						after = e
					}
					return false
				}
				return true
			})
		}
		if at == 0 {
			break
		}
		hi = at - 1
	}
	switch {
	case best != nil:
		c.last = best
		return best
	case after != nil:
		return after
	}
	return nil
}

// prune forgets code that ended before t.
func (c *codeTable) prune(t uint64) {
	for len(c.endedQ) > 0 && c.endedQ[0].unload < t {
		c.forgetOldest()
	}
	if len(c.endedQ) == 0 {
		c.endedQ = nil // let the array go
	}
}

// jitlogRecord applies what a jitlog record says of code; false when the
// table is full.
func (c *codeTable) jitlogRecord(r jitlog.Record) bool {
	switch r := r.(type) {
	case *jitlog.LoadRecord:
		return c.load(r.Addr, r.Size, r.Seq, r.Time)
	case *jitlog.MoveRecord:
		c.move(r.Seq, r.NewAddr, r.Time)
	case *jitlog.UnloadRecord:
		c.unload(r.Seq, r.Time)
	case *jitlog.UnwindRecord:
		if e := c.bySeq[r.Seq]; e != nil && c.tableLimit > 0 {
			c.setUnwind(e, r.EHFrame)
		}
	}
	return true
}

// jitdumpRecord applies what a jitdump record says of code; false when
// the table is full.
func (c *codeTable) jitdumpRecord(r jitdump.Record) bool {
	switch r := r.(type) {
	case *jitdump.CodeLoad:
		if !c.load(r.CodeAddr, r.CodeSize, r.CodeIndex, r.Timestamp) {
			return false
		}
		if len(c.nextEH) > 0 {
			if e := c.bySeq[r.CodeIndex]; e != nil && e.start == r.CodeAddr {
				c.setUnwind(e, c.nextEH)
			}
			c.nextEH = c.nextEH[:0]
		}
	case *jitdump.CodeMove:
		c.move(r.CodeIndex, r.NewCodeAddr, r.Timestamp)
	case *jitdump.UnwindingInfo:
		if c.tableLimit > 0 {
			// The reader reuses its buffers: a copy, for the load
			// that follows.
			c.nextEH = append(c.nextEH[:0], r.EHFrame()...)
		}
	}
	return true
}

// setUnwind compiles the unwinding information a JIT logged for the
// code of e, if the table's bound leaves room for it.
func (c *codeTable) setUnwind(e *codeEntry, ehFrame []byte) {
	t := unwind.JITTable(ehFrame, e.end-e.start)
	if t == nil {
		return
	}
	size := t.Size()
	if c.tableBytes+size > c.tableLimit {
		c.tablesFull = true
		return
	}
	if e.unwind != nil {
		c.tableBytes -= e.unwind.Size()
	}
	e.unwind, c.tableBytes = t, c.tableBytes+size
}
