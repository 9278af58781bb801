// Package jitbundle encodes jitprof's own perf.data feature section
// (perfdata.FeatJitprof): the JIT data files of the recorded processes
// (perf maps, jitdumps, jitlog databases, ...), copied at record time so
// that a report names JIT code after the files are gone or rewritten.
//
// The section is little-endian:
//
//	magic   [8]byte "JITPBNDL"
//	version u32     (1)
//	count   u32     number of entries
//	count × entry:
//	    pid      u32
//	    kindLen  u16, kind  [kindLen]byte  ("perfmap", "jitdump", "jitlog", ...; "tsc": see KindTSC)
//	    pathLen  u16, path  [pathLen]byte  (the path the recorder read)
//	    mtime    i64   modification time, Unix nanoseconds
//	    dataLen  u64, data  [dataLen]byte
//
// A reader of a later version refuses it rather than misreading it. The
// package is pure: no I/O.
package jitbundle

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Magic opens a section; Version is the one this package writes and reads.
const (
	Magic   = "JITPBNDL"
	Version = 1
)

// Limits on what Encode writes and Decode accepts.
const (
	MaxEntries = 1 << 16
	MaxKind    = 64
	MaxPath    = 4096
	// MaxData bounds one file; it matches the handlers' trust limit.
	MaxData = 1 << 30
)

// Errors callers branch on.
var (
	ErrFormat  = errors.New("malformed jitprof section")
	ErrVersion = errors.New("unsupported jitprof section version")
	ErrLimit   = errors.New("jitprof section over a limit")
)

// Entry is one copied file.
type Entry struct {
	PID   int
	Kind  string
	Path  string
	MTime int64 // Unix nanoseconds
	Data  []byte
}

const headerSize = 16

// minEntry is the size of an entry with empty strings and data.
const minEntry = 4 + 2 + 2 + 8 + 8

// Encode encodes entries; an entry over a limit is an error wrapping
// ErrLimit, since Decode would refuse it.
func Encode(entries []Entry) ([]byte, error) {
	if len(entries) > MaxEntries {
		return nil, fmt.Errorf("jitbundle: %d entries, more than %d: %w", len(entries), MaxEntries, ErrLimit)
	}
	n := headerSize
	for i, e := range entries {
		if err := check(i, len(e.Kind), len(e.Path), uint64(len(e.Data))); err != nil {
			return nil, err
		}
		if e.PID < 0 || e.PID > 1<<32-1 {
			return nil, fmt.Errorf("jitbundle: entry %d: pid %d out of range: %w", i, e.PID, ErrLimit)
		}
		n += minEntry + len(e.Kind) + len(e.Path) + len(e.Data)
	}
	b := make([]byte, 0, n)
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint32(b, Version)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(entries)))
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint32(b, uint32(e.PID))
		b = binary.LittleEndian.AppendUint16(b, uint16(len(e.Kind)))
		b = append(b, e.Kind...)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(e.Path)))
		b = append(b, e.Path...)
		b = binary.LittleEndian.AppendUint64(b, uint64(e.MTime))
		b = binary.LittleEndian.AppendUint64(b, uint64(len(e.Data)))
		b = append(b, e.Data...)
	}
	return b, nil
}

func check(i, kind, path int, data uint64) error {
	switch {
	case kind == 0 || kind > MaxKind:
		return fmt.Errorf("jitbundle: entry %d: kind of %d bytes, want 1 to %d: %w", i, kind, MaxKind, ErrLimit)
	case path > MaxPath:
		return fmt.Errorf("jitbundle: entry %d: path of %d bytes, more than %d: %w", i, path, MaxPath, ErrLimit)
	case data > MaxData:
		return fmt.Errorf("jitbundle: entry %d: %d bytes of data, more than %d: %w", i, data, MaxData, ErrLimit)
	}
	return nil
}

// Decode decodes a section. Entries' Data alias b, so that a large
// recording is not copied twice; the caller must not modify b while it
// uses them.
func Decode(b []byte) ([]Entry, error) {
	if len(b) < headerSize || string(b[:8]) != Magic {
		return nil, fmt.Errorf("jitbundle: no %q header: %w", Magic, ErrFormat)
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != Version {
		return nil, fmt.Errorf("jitbundle: version %d, want %d: %w", v, Version, ErrVersion)
	}
	count := binary.LittleEndian.Uint32(b[12:])
	if count > MaxEntries {
		return nil, fmt.Errorf("jitbundle: %d entries, more than %d: %w", count, MaxEntries, ErrLimit)
	}
	d := decoder{b: b, off: headerSize}
	// The count is untrusted: allocate no more entries than fit in b.
	entries := make([]Entry, 0, min(int(count), len(b)/minEntry))
	for i := range int(count) {
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
			return nil, fmt.Errorf("jitbundle: entry %d at offset %d: %w", i, start, d.err)
		}
		entries = append(entries, Entry{PID: int(pid), Kind: string(kind), Path: string(path), MTime: int64(mtime), Data: data})
	}
	if d.off != len(b) {
		return nil, fmt.Errorf("jitbundle: %d bytes after the last entry: %w", len(b)-d.off, ErrFormat)
	}
	return entries, nil
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
