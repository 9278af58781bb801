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
	for !r.f.Pipe && !r.done && r.end-r.off >= 8 {
		typ, size := r.f.header(r.off)
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
