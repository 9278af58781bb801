package jitlog

import (
	"errors"
	"fmt"
	"io"
)

// frameState is what a record's frame says about it.
type frameState int

const (
	published frameState = iota
	pending              // claimed, not yet published
	unclaimed            // zero: the end of the records, for now
)

// parseFrame reads the frame at off; end bounds the records.
func parseFrame(f []byte, off, end uint64) (size uint64, kind Kind, st frameState, err error) {
	size = uint64(le.Uint32(f))
	commit := le.Uint32(f[4:])
	sane := size >= frameSize && size%8 == 0 && size <= end-off && size <= maxRecord
	switch {
	case commit == 0 && size == 0:
		return 0, 0, unclaimed, nil
	case commit == 0 && sane:
		return size, 0, pending, nil
	case commit&0xffff0000 != commitTag:
		return 0, 0, 0, fmt.Errorf("bad commit word %#x: %w", commit, ErrFormat)
	case !sane:
		return 0, 0, 0, fmt.Errorf("bad record size %d with %d bytes left: %w", size, end-off, ErrFormat)
	}
	return size, Kind(commit & 0xffff), published, nil
}

func tornError(off, size uint64) error {
	return fmt.Errorf("jitlog: record at offset %d (%d bytes): writer died before publishing it: %w", off, size, ErrTorn)
}

// A Reader decodes a snapshot of a database in file order:
//
//	for r.Next() { rec := r.Record(); ... }
//	if err := r.Err(); ...
//
// The first record is the *Header. Records are fresh values the caller
// may keep. In a snapshot, a record whose writer had not published it is
// skipped and reported as ErrTorn by Err once every whole record has been
// returned; for a file whose writer still runs, such a record is merely
// not finished yet, which is what a Tail waits for.
type Reader struct {
	r        io.ReaderAt
	hdr      *Header
	off, end uint64
	buf      []byte
	bufOff   uint64
	rec      Record
	err      error
	torn     error
	started  bool
	clocks   clocks
	want     uint64 // the kinds Next returns, by bit; 0: all
}

const readChunk = 64 << 10

// Want makes Next step over the records of kinds other than kinds
// without decoding them (the header is returned all the same); no kinds
// is every record. A reader that names code needs its loads, moves,
// unloads and unwinding records, and the region records a JIT writes for
// each call into its code, which only a report's times in JIT regions
// read (internal/pathtime), can be most of a file: decoding them was a
// tenth of the daemon's CPU time beside minijit. What is stepped over is
// not checked, only its frame.
func (r *Reader) Want(kinds ...Kind) { r.want = wantOf(kinds) }

func wantOf(kinds []Kind) uint64 {
	var w uint64
	for _, k := range kinds {
		if k < 64 {
			w |= 1 << k
		}
	}
	return w
}

// tscRegions are the region records whose times a Clock record converts.
const tscRegions = 1<<KindRegionEnterTSC | 1<<KindRegionExitTSC

// NewReader reads the header of a database of size bytes read through r
// (a *bytes.Reader for bytes in memory).
func NewReader(r io.ReaderAt, size int64) (*Reader, error) {
	var hb [HeaderSize]byte
	if size < HeaderSize {
		return nil, fmt.Errorf("jitlog: %d bytes, smaller than the header: %w", size, ErrFormat)
	}
	if _, err := r.ReadAt(hb[:], 0); err != nil {
		return nil, fmt.Errorf("jitlog: header: %w", err)
	}
	h, err := decodeHeader(hb[:])
	if err != nil {
		return nil, err
	}
	// Records end at the first unclaimed frame; the header's append
	// offset is only a writers' hint.
	return &Reader{r: r, hdr: h, off: HeaderSize, end: uint64(size), clocks: clocks{}}, nil
}

// Header is the file header.
func (r *Reader) Header() *Header { return r.hdr }

// Record is the record the last successful Next decoded.
func (r *Reader) Record() Record { return r.rec }

// Err is the error that stopped Next: nil at a clean end, ErrTorn if
// unpublished records were skipped, or what made the file unreadable.
func (r *Reader) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.torn
}

// Offset is where the next record starts.
func (r *Reader) Offset() int64 { return int64(r.off) }

// bytesAt returns n bytes at off, within end, reading ahead in chunks.
func (r *Reader) bytesAt(off, n uint64) ([]byte, error) {
	if off >= r.bufOff && off+n <= r.bufOff+uint64(len(r.buf)) {
		return r.buf[off-r.bufOff : off-r.bufOff+n], nil
	}
	want := min(max(n, readChunk), r.end-off)
	if uint64(cap(r.buf)) < want {
		r.buf = make([]byte, want)
	}
	r.buf = r.buf[:want]
	got, err := r.r.ReadAt(r.buf, int64(off))
	if uint64(got) < n {
		r.buf = r.buf[:0]
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	r.buf, r.bufOff = r.buf[:got], off
	return r.buf[:n], nil
}

// Next decodes the next record, reporting false at the end or on error.
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	if !r.started {
		r.started, r.rec = true, r.hdr
		return true
	}
	for r.off+frameSize <= r.end {
		off := r.off
		f, err := r.bytesAt(off, frameSize)
		if err != nil {
			r.err = fmt.Errorf("jitlog: record at offset %d: %w", off, err)
			return false
		}
		size, kind, st, err := parseFrame(f, off, r.end)
		if err != nil {
			r.err = fmt.Errorf("jitlog: record at offset %d: %w", off, err)
			return false
		}
		switch st {
		case unclaimed:
			return false
		case pending:
			if r.torn == nil {
				r.torn = tornError(off, size)
			}
			r.off += size
			continue
		}
		r.off += size
		if kind == KindPad {
			continue
		}
		skip := r.want != 0 && (kind >= 64 || r.want&(1<<kind) == 0)
		if skip && (kind != KindClock || r.want&tscRegions == 0) {
			continue
		}
		b, err := r.bytesAt(off, size)
		if err != nil {
			r.err = fmt.Errorf("jitlog: record at offset %d: %w", off, err)
			return false
		}
		rec, err := decodeRecord(kind, b)
		switch {
		case err != nil:
		case kind == KindClock:
			r.clocks.add(rec.(*ClockRecord))
		case kind == KindRegionEnterTSC || kind == KindRegionExitTSC:
			err = r.clocks.convert(kind, rec)
		}
		if err != nil {
			r.err = fmt.Errorf("jitlog: record at offset %d: %w", off, err)
			return false
		}
		if skip {
			continue // a clock the wanted regions' times need
		}
		r.rec = rec
		return true
	}
	return false
}

// Read reads the database at path, after the checks in opts (nil for the
// defaults), and returns its records, header first. On ErrTorn the records
// are every whole record in the file.
func Read(path string, opts *ReadOptions) ([]Record, error) {
	var recs []Record
	err := Scan(path, opts, func(r Record) error {
		recs = append(recs, r)
		return nil
	})
	return recs, err
}

// Scan is Read for databases too big to hold: it calls fn with each
// record in turn, header first, and keeps none. It stops at fn's first
// error and returns it as it is. ErrTorn, as Read's, comes after every
// whole record was passed to fn.
func Scan(path string, opts *ReadOptions, fn func(Record) error) error {
	f, err := openChecked(path, opts)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := NewReader(f, f.Size)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	for r.Next() {
		if err := fn(r.Record()); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}
