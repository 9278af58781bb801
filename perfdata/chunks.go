package perfdata

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Chunk is a byte range of a file's data section that starts and ends at
// record boundaries (offsets a Reader gave), so that its records can be
// read on their own.
type Chunk struct{ Start, End int64 }

// RecordsIn returns a Reader of the records of c.
// Readers of different chunks may be used from different goroutines.
func (f *File) RecordsIn(c Chunk) *Reader {
	r := &Reader{f: f, off: c.Start, end: c.End}
	lo, hi := f.DataOffset, f.DataOffset+f.DataSize
	if f.Pipe || c.Start < lo || c.End > hi || c.Start > c.End {
		r.err = fmt.Errorf("chunk %d-%d is outside the data section %d-%d", c.Start, c.End, lo, hi)
		r.done = true
	}
	return r
}

// NextNonSample is Next, but passes over SAMPLE records reading only
// their headers (they are still counted): faster for callers that want
// the other records.
func (r *Reader) NextNonSample() bool {
	// The hot loop of a timeline pass: one load per record header.
	var n uint64
	copying := r.Sequential && r.f.fd != nil
	for !r.f.Pipe && !r.done && r.end-r.off >= 8 && (r.stop == 0 || r.off < r.stop) {
		var typ RecordType
		var size int64
		if copying {
			h, err := r.window(r.off, 8)
			if err != nil {
				break // Next meets it again and reports it
			}
			typ, size = r.f.headerOf(h)
		} else {
			typ, size = r.f.header(r.off)
			r.touchAhead(r.off)
		}
		if typ != RecordSample || size < 8 || size > r.end-r.off {
			break // Next decodes it, or reports what is wrong with it
		}
		n++
		r.off += size
	}
	r.counts[RecordSample] += n
	for r.Next() {
		if r.rec.Type() != RecordSample {
			return true
		}
	}
	return false
}

// Release tells the system that the pages of c will not be read again
// soon, so they stop counting in the process's memory; reading them
// again maps them back from the page cache. It does nothing unless the
// file was mapped by Open.
func (f *File) Release(c Chunk) {
	if f.Pipe || f.unmap == nil {
		return
	}
	page := int64(os.Getpagesize())
	lo := (max(c.Start, 0) + page - 1) / page * page
	hi := min(c.End, int64(len(f.data))) / page * page
	if lo < hi {
		unix.Madvise(f.data[lo:hi], unix.MADV_DONTNEED) // advice: failing it only costs memory
	}
}

// RecordsUntil returns a Reader of the records from start, a record
// boundary, up to the first boundary at or after stop, which unlike a
// Chunk's end need not be one; NextOffset then tells where it stopped.
// Readers of different ranges may be used from different goroutines.
func (f *File) RecordsUntil(start, stop int64) *Reader {
	r := f.RecordsIn(Chunk{start, f.DataOffset + f.DataSize})
	if stop <= start {
		r.done = true
	}
	r.stop = stop
	return r
}

// JumpTo moves a Reader of a mapped file to off, a record boundary some
// Reader of the file gave, for reading a few records picked out of a
// range without reading the ones between; it clears the Reader's stop.
func (r *Reader) JumpTo(off int64) {
	if r.f.Pipe || r.err != nil {
		return
	}
	r.off, r.stop, r.done = off, 0, off >= r.end
}

// NextOffset returns the offset of the record after the current one:
// where reading goes on, or where it stopped.
func (r *Reader) NextOffset() int64 { return r.off }

// syncRecords is how many records in a row Resync wants to decode
// cleanly before it takes an offset for a record boundary.
const syncRecords = 16

// Resync guesses the first record boundary at or after from and before
// to, for reading a file's records in parallel from an offset no record
// led to: it returns the first 8-byte-aligned offset (perf pads every
// record to 8 bytes) from which syncRecords records in a row, or all
// records to the end of the data, are of known types and decode
// cleanly. It is a guess, if a very good one: a caller confirms it when
// reading the records before from stops exactly there. It returns false
// when no offset in the range qualifies.
func (f *File) Resync(from, to int64) (int64, bool) {
	if f.Pipe {
		return 0, false
	}
	lo, end := f.DataOffset, f.DataOffset+f.DataSize
	from = max(from, lo)
	to = min(to, end)
	r := f.RecordsIn(Chunk{lo, end}) // one Reader for every offset tried: it is big
	r.SkipCallchains = true
	for off := lo + (from-lo+7)/8*8; off < to; off += 8 {
		r.off, r.done, r.err, r.rec = off, false, nil, nil
		if r.startsRecords() {
			return off, true
		}
	}
	return 0, false
}

// startsRecords reports whether the records r reads from where it is
// look like a perf.data file's: see Resync.
func (r *Reader) startsRecords() bool {
	f, end := r.f, r.end
	for range syncRecords {
		if r.off == end {
			return true
		}
		if end-r.off < 8 {
			return false
		}
		typ, size := f.header(r.off)
		// The header is checked before Next reads the record, which
		// then has no reason to report a torn record: a false start
		// must not leave warnings behind.
		if !syncType(typ) || size < 8 || size%8 != 0 || size > end-r.off {
			return false
		}
		if !r.Next() {
			return false
		}
		// A record of a type whose body has one size must have it: the
		// last word of a sample (a callchain's garbage frame, say) can
		// read as the header of an EXIT whose claimed size happens to
		// end on a true boundary, and decode cleanly.
		if body, ok := fixedBody(typ); ok {
			if f.idSize >= 0 && size != int64(8+body+f.idSize) {
				return false
			}
		}
		c := r.rec.Base()
		// A sample names its event, one of the file's. (The records
		// perf synthesizes at the start may name none.)
		if typ == RecordSample && len(f.Attrs) > 1 && c.Attr.SampleType&(SampleID|SampleIdentifier) != 0 &&
			f.AttrByID(c.ID) == nil {
			return false
		}
	}
	return true
}

// syncType reports whether t is a record type Resync accepts: every one
// perf writes, but those followed by a payload outside the record.
func syncType(t RecordType) bool {
	switch {
	case t >= RecordMmap && t <= RecordAuxOutputHWID:
		return true
	case t >= RecordHeaderAttr && t <= RecordFinishedInit:
		return t != RecordTracingData && t != RecordAuxtrace
	}
	return false
}

// fixedBody returns the size of a kernel record's body before its
// sample_id trailer, for the types where it is the same in every record.
func fixedBody(t RecordType) (int, bool) {
	switch t {
	case RecordExit, RecordFork: // pid, ppid, tid, ptid, time
		return 24, true
	case RecordThrottle, RecordUnthrottle: // time, id, stream_id
		return 24, true
	case RecordLost: // id, lost
		return 16, true
	case RecordAux: // aux_offset, aux_size, flags
		return 24, true
	case RecordItraceStart, RecordSwitchCPUWide: // two u32s
		return 8, true
	case RecordLostSamples, RecordAuxOutputHWID: // one u64
		return 8, true
	case RecordSwitch:
		return 0, true
	case RecordBPFEvent: // type, flags, id, tag[8]
		return 16, true
	}
	return 0, false
}
