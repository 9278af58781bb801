package jitdump

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/jitprof/jitprof/internal/jitname"
)

// DefaultMaxRecordSize bounds a record unless Reader.MaxRecordSize says
// otherwise. V8's largest records (code of big builtins) are tens of KB.
const DefaultMaxRecordSize = 64 << 20

// maxHeaderSize bounds the header's total_size; later versions may grow the
// header, but not by kilobytes.
const maxHeaderSize = 4096

// readChunk bounds how much the reader allocates ahead of data actually
// read, so that a lying total_size on a short file costs nothing.
const readChunk = 1 << 20

// Reader reads records one at a time:
//
//	r, err := jitdump.NewReader(f)
//	for r.Next() {
//		switch rec := r.Record().(type) { ... }
//	}
//	if err := r.Err(); errors.Is(err, jitdump.ErrTruncated) { ... }
//
// To avoid allocating per record, the Record returned and the byte slices
// in it (Code, Data, Entries) are reused by the next call to Next; strings
// are not. Copy what you keep.
type Reader struct {
	// MaxRecordSize bounds total_size of one record; a larger record stops
	// the reader with ErrTooLarge. Zero means DefaultMaxRecordSize.
	MaxRecordSize uint32

	r       *bufio.Reader
	hdr     Header
	order   binary.ByteOrder
	off     int64
	n       int // records read
	buf     []byte
	rec     Record
	err     error
	load    CodeLoad
	move    CodeMove
	debug   DebugInfo
	entries []DebugEntry // reused by debug records
	close   CodeClose
	unwind  UnwindingInfo
	raw     Unknown
}

// NewReader reads the file header from r. An empty or short file gives
// ErrTruncated: a JIT that has just created its dump looks like that.
func NewReader(r io.Reader) (*Reader, error) {
	rd := &Reader{r: bufio.NewReaderSize(r, 64<<10)}
	var b [HeaderSize]byte
	if _, err := io.ReadFull(rd.r, b[:]); err != nil {
		return nil, fmt.Errorf("jitdump: header: %w", eofIsTruncated(err))
	}
	switch {
	case binary.LittleEndian.Uint32(b[0:]) == Magic:
		rd.order = binary.LittleEndian
	case binary.BigEndian.Uint32(b[0:]) == Magic:
		rd.order = binary.BigEndian
	default:
		// Never the bytes: a dump may be any file put in its place.
		return nil, fmt.Errorf("jitdump: header at offset 0: %w", ErrBadMagic)
	}
	o := rd.order
	rd.hdr = Header{
		ByteOrder: o,
		Version:   o.Uint32(b[4:]),
		Size:      o.Uint32(b[8:]),
		ElfMach:   o.Uint32(b[12:]),
		Pad1:      o.Uint32(b[16:]),
		PID:       o.Uint32(b[20:]),
		Timestamp: o.Uint64(b[24:]),
		Flags:     o.Uint64(b[32:]),
	}
	if rd.hdr.Version != Version {
		return nil, fmt.Errorf("jitdump: header: %w %d (want %d)", ErrVersion, rd.hdr.Version, Version)
	}
	if rd.hdr.Size < HeaderSize || rd.hdr.Size > maxHeaderSize {
		return nil, fmt.Errorf("jitdump: header: %w: total_size %d not in [%d, %d]", ErrMalformed, rd.hdr.Size, HeaderSize, maxHeaderSize)
	}
	// A longer header has fields this version does not know; skip them.
	if extra := int64(rd.hdr.Size) - HeaderSize; extra > 0 {
		if _, err := io.CopyN(io.Discard, rd.r, extra); err != nil {
			return nil, fmt.Errorf("jitdump: header: %w", eofIsTruncated(err))
		}
	}
	rd.off = int64(rd.hdr.Size)
	return rd, nil
}

// ResumeReader reads on in a dump whose header h an earlier Reader read:
// r is the file from offset off on, where a record begins, so that a
// follower of a growing dump reads each record once. Offset and errors
// give offsets in the file.
func ResumeReader(r io.Reader, h Header, off int64) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), hdr: h, order: h.ByteOrder, off: off}
}

// Header returns the file header.
func (r *Reader) Header() Header { return r.hdr }

// Offset returns the file offset of the next record: after a truncated
// file, where the whole records end.
func (r *Reader) Offset() int64 { return r.off }

// Next reads the next record. It returns false at the end of the file or
// on an error, which Err then returns.
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	r.rec = nil
	var h [RecordHeaderSize]byte
	if _, err := io.ReadFull(r.r, h[:]); err != nil {
		if err != io.EOF {
			r.fail(eofIsTruncated(err))
		} else {
			r.err = io.EOF
		}
		return false
	}
	rh := RecordHeader{
		Type:      RecordType(r.order.Uint32(h[0:])),
		Size:      r.order.Uint32(h[4:]),
		Timestamp: r.order.Uint64(h[8:]),
		Offset:    r.off,
	}
	maxSize := r.MaxRecordSize
	if maxSize == 0 {
		maxSize = DefaultMaxRecordSize
	}
	switch {
	case rh.Size < RecordHeaderSize:
		r.fail(fmt.Errorf("%s: %w: total_size %d is less than the record header", rh.Type, ErrMalformed, rh.Size))
		return false
	case rh.Size > maxSize:
		r.fail(fmt.Errorf("%s: %w: total_size %d, limit %d", rh.Type, ErrTooLarge, rh.Size, maxSize))
		return false
	}
	body, err := r.readBody(int(rh.Size - RecordHeaderSize))
	if err != nil {
		r.fail(fmt.Errorf("%s: %w", rh.Type, eofIsTruncated(err)))
		return false
	}
	if err := r.decode(rh, body); err != nil {
		r.fail(fmt.Errorf("%s: %w", rh.Type, err))
		return false
	}
	r.off += int64(rh.Size)
	r.n++
	return true
}

// Record returns the record read by the last successful Next.
func (r *Reader) Record() Record { return r.rec }

// Err returns the error that stopped Next, or nil at a clean end of file.
// A file that ends inside a record gives an error wrapping ErrTruncated.
func (r *Reader) Err() error {
	if r.err == io.EOF {
		return nil
	}
	return r.err
}

func (r *Reader) fail(err error) {
	r.err = fmt.Errorf("jitdump: record %d at offset %d: %w", r.n, r.off, err)
}

func eofIsTruncated(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return ErrTruncated
	}
	return err
}

// readBody reads n bytes into the reused buffer, growing it only as data
// arrives.
func (r *Reader) readBody(n int) ([]byte, error) {
	if n <= cap(r.buf) {
		r.buf = r.buf[:n]
		_, err := io.ReadFull(r.r, r.buf)
		return r.buf, err
	}
	r.buf = r.buf[:0]
	for len(r.buf) < n {
		chunk := min(n-len(r.buf), readChunk)
		r.buf = append(r.buf, make([]byte, chunk)...)
		if _, err := io.ReadFull(r.r, r.buf[len(r.buf)-chunk:]); err != nil {
			return nil, err
		}
	}
	return r.buf, nil
}

func (r *Reader) decode(rh RecordHeader, b []byte) error {
	o := r.order
	switch rh.Type {
	case TypeCodeLoad:
		const fixed = 40
		if len(b) < fixed {
			return shortRecord(len(b), fixed)
		}
		name, code, err := cString(b[fixed:])
		if err != nil {
			return fmt.Errorf("name: %w", err)
		}
		l := &r.load
		*l = CodeLoad{
			RecordHeader: rh,
			PID:          o.Uint32(b[0:]),
			TID:          o.Uint32(b[4:]),
			VMA:          o.Uint64(b[8:]),
			CodeAddr:     o.Uint64(b[16:]),
			CodeSize:     o.Uint64(b[24:]),
			CodeIndex:    o.Uint64(b[32:]),
			Name:         name,
		}
		if uint64(len(code)) > l.CodeSize {
			code = code[:l.CodeSize]
		}
		l.Code = code
		r.rec = l
	case TypeCodeMove:
		const fixed = 48
		if len(b) < fixed {
			return shortRecord(len(b), fixed)
		}
		r.move = CodeMove{
			RecordHeader: rh,
			PID:          o.Uint32(b[0:]),
			TID:          o.Uint32(b[4:]),
			VMA:          o.Uint64(b[8:]),
			OldCodeAddr:  o.Uint64(b[16:]),
			NewCodeAddr:  o.Uint64(b[24:]),
			CodeSize:     o.Uint64(b[32:]),
			CodeIndex:    o.Uint64(b[40:]),
		}
		r.rec = &r.move
	case TypeCodeDebugInfo:
		if err := r.decodeDebug(rh, b); err != nil {
			r.debug = DebugInfo{RecordHeader: rh, Err: fmt.Errorf("jitdump: debug info at offset %d: %w", rh.Offset, err)}
			if len(b) >= 8 {
				r.debug.CodeAddr = o.Uint64(b)
			}
		}
		r.rec = &r.debug
	case TypeCodeClose:
		r.close = CodeClose{RecordHeader: rh}
		r.rec = &r.close
	case TypeCodeUnwindingInfo:
		const fixed = 24
		if len(b) < fixed {
			return shortRecord(len(b), fixed)
		}
		size, hdrSize := o.Uint64(b[0:]), o.Uint64(b[8:])
		if size > uint64(len(b)-fixed) {
			return fmt.Errorf("%w: unwind_data_size %d exceeds the %d bytes left", ErrMalformed, size, len(b)-fixed)
		}
		if hdrSize > size {
			return fmt.Errorf("%w: eh_frame_hdr_size %d exceeds unwind_data_size %d", ErrMalformed, hdrSize, size)
		}
		r.unwind = UnwindingInfo{
			RecordHeader:   rh,
			EHFrameHdrSize: hdrSize,
			MappedSize:     o.Uint64(b[16:]),
			Data:           b[fixed : fixed+size],
		}
		r.rec = &r.unwind
	default:
		r.raw = Unknown{RecordHeader: rh, Data: b}
		r.rec = &r.raw
	}
	return nil
}

// debugEntryMin is a debug entry's fixed part plus the shortest name, "\0".
const debugEntryMin = 17

func (r *Reader) decodeDebug(rh RecordHeader, b []byte) error {
	const fixed = 16
	if len(b) < fixed {
		return shortRecord(len(b), fixed)
	}
	o := r.order
	addr, nr := o.Uint64(b[0:]), o.Uint64(b[8:])
	// Bound nr_entry by the bytes present before allocating for it.
	if nr > uint64((len(b)-fixed)/debugEntryMin) {
		return fmt.Errorf("%w: nr_entry %d does not fit in %d bytes", ErrMalformed, nr, len(b)-fixed)
	}
	entries := r.entries[:0]
	rest := b[fixed:]
	prev, havePrev := "", false
	for i := range nr {
		if len(rest) < debugEntryMin {
			return fmt.Errorf("entry %d: %w", i, shortRecord(len(rest), debugEntryMin))
		}
		e := DebugEntry{Addr: o.Uint64(rest[0:]), Line: o.Uint32(rest[8:]), Discrim: o.Uint32(rest[12:])}
		raw, after, err := cBytes(rest[16:])
		if err != nil {
			return fmt.Errorf("entry %d: file name: %w", i, err)
		}
		if len(raw) == 1 && raw[0] == 0xff {
			if !havePrev {
				return fmt.Errorf("entry %d: %w: file name \"same as previous\" with no previous entry", i, ErrMalformed)
			}
			e.File = prev
		} else {
			// Consecutive entries usually share a file; reuse the string.
			if !havePrev || prev != string(raw) {
				prev = jitname.Cap(raw)
			}
			e.File = prev
		}
		havePrev = true
		entries = append(entries, e)
		rest = after
	}
	// Writers pad to 8 bytes with zeros; anything more means the entries
	// were misread, most likely because a name had a NUL inside.
	if len(rest) >= 8 || bytes.Count(rest, []byte{0}) != len(rest) {
		return fmt.Errorf("%w: %d bytes after %d entries are not padding", ErrMalformed, len(rest), nr)
	}
	r.entries = entries
	r.debug = DebugInfo{RecordHeader: rh, CodeAddr: addr, Entries: entries}
	return nil
}

func shortRecord(have, want int) error {
	return fmt.Errorf("%w: payload of %d bytes, need at least %d", ErrMalformed, have, want)
}

func cBytes(b []byte) (s, rest []byte, err error) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return nil, nil, fmt.Errorf("%w: string not NUL-terminated within the record", ErrMalformed)
	}
	return b[:i], b[i+1:], nil
}

// cString returns the NUL-terminated name at b's start, cut to
// jitname.Max bytes, and what follows it.
func cString(b []byte) (string, []byte, error) {
	s, rest, err := cBytes(b)
	return jitname.Cap(s), rest, err
}
