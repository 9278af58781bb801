package perfdata

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Chunk is a byte range of a file's data section that starts and ends at
// record boundaries, so that its records can be read on their own.
type Chunk struct{ Start, End int64 }

// Chunks splits the data section of a file into at most n chunks of about
// equal size, for reading them in parallel with RecordsIn. It walks the
// record headers only. A malformed header ends the splitting: the rest of
// the data is the last chunk, whose Reader reports the error as Records
// would. A pipe-mode stream has no chunks.
func (f *File) Chunks(n int) []Chunk {
	if f.Pipe {
		return nil
	}
	start, end := f.DataOffset, f.DataOffset+f.DataSize
	target := max(f.DataSize/int64(max(n, 1)), 1)
	var out []Chunk
	for off := start; off < end; {
		if off-start >= target && len(out) < n-1 {
			out = append(out, Chunk{start, off})
			start = off
		}
		size := f.recordSpan(off, end)
		if size == 0 {
			break
		}
		off += size
	}
	return append(out, Chunk{start, end})
}

// recordSpan returns the bytes the record at off takes in the data section,
// its payload included, or 0 when its header is malformed.
func (f *File) recordSpan(off, end int64) int64 {
	if end-off < 8 {
		return 0
	}
	d := dec{b: f.data[off : off+8], swap: f.Swapped}
	typ := RecordType(d.u32())
	d.u16()
	size := int64(d.u16())
	if size < 8 || size > end-off {
		return 0
	}
	if typ == RecordAuxtrace || typ == RecordTracingData {
		n, err := payloadSize(&Unknown{RecType: typ, Data: f.data[off+8 : off+size]}, f.Swapped)
		if err != nil || n > end-off-size {
			return 0
		}
		size += n
	}
	return size
}

// RecordsIn returns a Reader of the records of c, a chunk from Chunks.
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
	for !r.f.Pipe && !r.done && r.end-r.off >= 8 {
		d := dec{b: r.f.data[r.off : r.off+8], swap: r.f.Swapped}
		typ := RecordType(d.u32())
		d.u16()
		size := int64(d.u16())
		if typ != RecordSample || size < 8 || size > r.end-r.off {
			break // Next decodes it, or reports what is wrong with it
		}
		r.counts[RecordSample]++
		r.off += size
	}
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
