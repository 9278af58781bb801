package jitbundle

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/jitprof/jitprof/perfdata"
)

// Magic opens a bundle; Version is the one this package writes. It reads
// 1 and 2.
const (
	Magic   = "JITPBNDL"
	Version = 2
)

// Limits on what Encode writes and Decode accepts.
const (
	MaxEntries   = 1 << 16
	MaxProcesses = 1 << 16
	MaxKind      = 64
	MaxPath      = 4096
	// MaxData bounds one file; it matches the trust limit on JIT files.
	MaxData = 1 << 30
)

// Errors callers branch on.
var (
	ErrFormat  = errors.New("malformed jitprof JIT data")
	ErrVersion = errors.New("unsupported jitprof JIT data version")
	ErrLimit   = errors.New("jitprof JIT data over a limit")
)

// Bundle is what a recording carries.
type Bundle struct {
	Processes []Process
	Files     []Entry
}

// Process is who a recorded process was when the recorder last saw it
// alive.
type Process struct {
	PID       int
	NSPID     int // 0 when unknown
	UID, GID  int
	StartTime uint64 // clock ticks since boot, 0 when unknown
}

// Entry is one copied file.
type Entry struct {
	PID   int
	Kind  string
	Path  string
	MTime int64 // Unix nanoseconds
	Data  []byte
	// Src, when set in place of Data, is where WriteTo streams the
	// file's data from, so that a recorder never holds a JIT's file
	// whole in memory.
	Src Source
}

// Source streams one file's data into an encoding.
type Source interface {
	// Len is the data's size, written before the data.
	Len() int64
	// WriteTo writes the data. Should it write less than Len (the
	// file shrank meanwhile), WriteTo pads the entry with zeros; more
	// is cut off.
	WriteTo(w io.Writer) (int64, error)
}

func (e *Entry) len() int64 {
	if e.Src != nil {
		return e.Src.Len()
	}
	return int64(len(e.Data))
}

// Sizes of the fixed parts.
const (
	headerV1  = 16
	headerV2  = 32
	procSize  = 24
	minEntry  = 4 + 2 + 2 + 8 + 8
	maxUint32 = 1<<32 - 1
)

// Load returns the bundle a recording carries, nil when it has none:
// from the event_types section, or from feature bit 200 where jitprof
// before version 2 put it. Event types that are not a bundle (perf wrote
// real ones before Linux 3.x) are not jitprof's and are ignored.
func Load(f *perfdata.File) (*Bundle, error) {
	if len(f.EventTypes) >= len(Magic) && string(f.EventTypes[:len(Magic)]) == Magic {
		return Decode(f.EventTypes)
	}
	if raw, ok := f.Features.Raw(perfdata.FeatJitprof); ok {
		return Decode(raw)
	}
	return nil, nil
}

// Encode encodes b; a field over a limit is an error wrapping ErrLimit,
// since Decode would refuse it.
func Encode(b *Bundle) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := WriteTo(&buf, b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Size is the size of b's encoding, or an error wrapping ErrLimit for a
// field over a limit.
func Size(b *Bundle) (int64, error) {
	if len(b.Files) > MaxEntries {
		return 0, fmt.Errorf("jitbundle: %d files, more than %d: %w", len(b.Files), MaxEntries, ErrLimit)
	}
	if len(b.Processes) > MaxProcesses {
		return 0, fmt.Errorf("jitbundle: %d processes, more than %d: %w", len(b.Processes), MaxProcesses, ErrLimit)
	}
	n := int64(headerV2 + procSize*len(b.Processes))
	for i, p := range b.Processes {
		for _, v := range []int{p.PID, p.NSPID, p.UID, p.GID} {
			if v < 0 || v > maxUint32 {
				return 0, fmt.Errorf("jitbundle: process %d: id %d out of range: %w", i, v, ErrLimit)
			}
		}
	}
	for i := range b.Files {
		e := &b.Files[i]
		if e.len() < 0 {
			return 0, fmt.Errorf("jitbundle: file %d: size %d: %w", i, e.len(), ErrLimit)
		}
		if err := check(i, len(e.Kind), len(e.Path), uint64(e.len())); err != nil {
			return 0, err
		}
		if e.PID < 0 || e.PID > maxUint32 {
			return 0, fmt.Errorf("jitbundle: file %d: pid %d out of range: %w", i, e.PID, ErrLimit)
		}
		n += int64(minEntry+len(e.Kind)+len(e.Path)) + e.len()
	}
	return n, nil
}

// WriteTo writes b's encoding to w, streaming each file's data from its
// Src, if it has one; it returns the bytes written, Size(b) when all
// went well.
func WriteTo(w io.Writer, b *Bundle) (int64, error) {
	n, err := Size(b)
	if err != nil {
		return 0, err
	}
	le := binary.LittleEndian
	cw := &countWriter{w: w}
	var out []byte
	out = append(out, Magic...)
	out = le.AppendUint32(out, Version)
	out = le.AppendUint32(out, 0)
	out = le.AppendUint64(out, uint64(n))
	out = le.AppendUint32(out, uint32(len(b.Processes)))
	out = le.AppendUint32(out, uint32(len(b.Files)))
	for _, p := range b.Processes {
		out = le.AppendUint32(out, uint32(p.PID))
		out = le.AppendUint32(out, uint32(p.NSPID))
		out = le.AppendUint32(out, uint32(p.UID))
		out = le.AppendUint32(out, uint32(p.GID))
		out = le.AppendUint64(out, p.StartTime)
	}
	if _, err := cw.Write(out); err != nil {
		return cw.n, err
	}
	for i := range b.Files {
		e := &b.Files[i]
		out = out[:0]
		out = le.AppendUint32(out, uint32(e.PID))
		out = le.AppendUint16(out, uint16(len(e.Kind)))
		out = append(out, e.Kind...)
		out = le.AppendUint16(out, uint16(len(e.Path)))
		out = append(out, e.Path...)
		out = le.AppendUint64(out, uint64(e.MTime))
		out = le.AppendUint64(out, uint64(e.len()))
		if _, err := cw.Write(out); err != nil {
			return cw.n, err
		}
		if e.Src == nil {
			if _, err := cw.Write(e.Data); err != nil {
				return cw.n, err
			}
			continue
		}
		// Exactly the size written above, whatever the source does.
		lw := &limitWriter{w: cw, left: e.Src.Len()}
		if _, err := e.Src.WriteTo(lw); err != nil && err != errFull {
			return cw.n, fmt.Errorf("jitbundle: file %d (%s): %w", i, e.Path, err)
		}
		for lw.left > 0 {
			z := make([]byte, min(lw.left, 64<<10))
			if _, err := lw.Write(z); err != nil {
				return cw.n, err
			}
		}
	}
	return cw.n, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// errFull stops a source that writes more than it said.
var errFull = errors.New("more data than its size")

// limitWriter passes on at most left bytes.
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(b []byte) (int, error) {
	if int64(len(b)) > l.left {
		n, err := l.w.Write(b[:l.left])
		l.left -= int64(n)
		if err == nil {
			err = errFull
		}
		return n, err
	}
	n, err := l.w.Write(b)
	l.left -= int64(n)
	return n, err
}

func check(i, kind, path int, data uint64) error {
	switch {
	case kind == 0 || kind > MaxKind:
		return fmt.Errorf("jitbundle: file %d: kind of %d bytes, want 1 to %d: %w", i, kind, MaxKind, ErrLimit)
	case path > MaxPath:
		return fmt.Errorf("jitbundle: file %d: path of %d bytes, more than %d: %w", i, path, MaxPath, ErrLimit)
	case data > MaxData:
		return fmt.Errorf("jitbundle: file %d: %d bytes of data, more than %d: %w", i, data, MaxData, ErrLimit)
	}
	return nil
}

// Decode decodes a bundle of version 1 or 2. Files' Data alias b, so
// that a large recording is not copied twice; the caller must not modify
// b while it uses them.
func Decode(b []byte) (*Bundle, error) {
	le := binary.LittleEndian
	if len(b) < headerV1 || string(b[:8]) != Magic {
		return nil, fmt.Errorf("jitbundle: no %q header: %w", Magic, ErrFormat)
	}
	var nprocs, nfiles uint32
	d := decoder{b: b}
	switch v := le.Uint32(b[8:]); v {
	case 1:
		nfiles = le.Uint32(b[12:])
		d.off = headerV1
	case 2:
		if len(b) < headerV2 {
			return nil, fmt.Errorf("jitbundle: %d bytes, shorter than the header: %w", len(b), ErrFormat)
		}
		if flags := le.Uint32(b[12:]); flags != 0 {
			return nil, fmt.Errorf("jitbundle: flags %#x, want 0: %w", flags, ErrFormat)
		}
		size := le.Uint64(b[16:])
		if size < headerV2 || size > uint64(len(b)) {
			return nil, fmt.Errorf("jitbundle: size %d, outside [%d, %d]: %w", size, headerV2, len(b), ErrFormat)
		}
		for i, c := range b[size:] {
			if c != 0 {
				return nil, fmt.Errorf("jitbundle: byte %d past the end is not zero: %w", int(size)+i, ErrFormat)
			}
		}
		d.b = b[:size]
		nprocs, nfiles = le.Uint32(b[24:]), le.Uint32(b[28:])
		d.off = headerV2
	default:
		return nil, fmt.Errorf("jitbundle: version %d, want 1 or %d: %w", v, Version, ErrVersion)
	}
	if nfiles > MaxEntries {
		return nil, fmt.Errorf("jitbundle: %d files, more than %d: %w", nfiles, MaxEntries, ErrLimit)
	}
	if nprocs > MaxProcesses {
		return nil, fmt.Errorf("jitbundle: %d processes, more than %d: %w", nprocs, MaxProcesses, ErrLimit)
	}
	// The counts are untrusted: allocate no more than fits in b.
	out := &Bundle{
		Processes: make([]Process, 0, min(int(nprocs), len(d.b)/procSize)),
		Files:     make([]Entry, 0, min(int(nfiles), len(d.b)/minEntry)),
	}
	for i := range int(nprocs) {
		start := d.off
		p := Process{PID: int(d.u32()), NSPID: int(d.u32()), UID: int(d.u32()), GID: int(d.u32()), StartTime: d.u64()}
		if d.err != nil {
			return nil, fmt.Errorf("jitbundle: process %d at offset %d: %w", i, start, d.err)
		}
		out.Processes = append(out.Processes, p)
	}
	for i := range int(nfiles) {
		start := d.off
		pid := d.u32()
		kind := d.bytes(uint64(d.u16()))
		path := d.bytes(uint64(d.u16()))
		mtime := d.u64()
		size := d.u64()
		if d.err == nil {
			d.err = check(i, len(kind), len(path), size)
		}
		data := d.bytes(size)
		if d.err != nil {
			return nil, fmt.Errorf("jitbundle: file %d at offset %d: %w", i, start, d.err)
		}
		out.Files = append(out.Files, Entry{PID: int(pid), Kind: string(kind), Path: string(path), MTime: int64(mtime), Data: data})
	}
	if d.off != len(d.b) {
		return nil, fmt.Errorf("jitbundle: %d bytes after the last file: %w", len(d.b)-d.off, ErrFormat)
	}
	return out, nil
}

// decoder reads fields, remembering the first short read.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.err = fmt.Errorf("%d bytes wanted, %d left: %w", n, len(d.b)-d.off, ErrFormat)
		return nil
	}
	s := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return s
}

func (d *decoder) u16() uint16 {
	if s := d.bytes(2); s != nil {
		return binary.LittleEndian.Uint16(s)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if s := d.bytes(4); s != nil {
		return binary.LittleEndian.Uint32(s)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if s := d.bytes(8); s != nil {
		return binary.LittleEndian.Uint64(s)
	}
	return 0
}

// Entries returns the bundle's entries of kind for process pid (0: of
// every process), in file order; none for a nil Bundle (a recording
// without jitprof's data).
func (b *Bundle) Entries(kind string, pid int) []Entry {
	if b == nil {
		return nil
	}
	var out []Entry
	for _, e := range b.Files {
		if e.Kind == kind && (pid == 0 || e.PID == pid) {
			out = append(out, e)
		}
	}
	return out
}
