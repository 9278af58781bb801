package sampledb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The on-disk layout of a sample file, written down once here; the
// writer, the reader and docs/sample-files.md follow this table. All
// integers little-endian.
//
//	header (headerSize bytes)
//	nodes:   capacity × 24 bytes {key1, key2, count u64}; node 0 is unused
//	buckets: capacity × u32, the first node of each hash chain (0: none)
//	next:    capacity × u32, the next node in a node's chain (0: none)
const (
	magic      = "JPSAMPL\n"
	version    = 1
	headerSize = 512

	offMagic       = 0
	offVersion     = 8
	offHeaderSize  = 12
	offCapacity    = 16 // u64, stored last when the table grows
	offUsed        = 24 // u64, stored after a node is written: publishes it
	offKind        = 32
	offFlags       = 36
	offCount       = 40
	offUnitMask    = 48
	offAnonStart   = 56
	offAnonEnd     = 64
	offCGAnonStart = 72
	offCGAnonEnd   = 80
	offMtime       = 88
	offCreated     = 96
	offBuildIDLen  = 104
	offEventLen    = 108 // u16
	offBuildID     = 112
	offEvent       = 176
	// Bytes offEvent+maxEvent to headerSize are reserved: written as
	// zeros, ignored by readers, for fields a later writer adds without
	// changing the version.

	maxBuildID = 64
	maxEvent   = 255

	nodeSize = 24
	// slotSize is what one unit of capacity costs: a node, a bucket and
	// a next index.
	slotSize = nodeSize + 4 + 4

	minCapacity = 8
	maxCapacity = 1 << 31
)

// Header flags.
const (
	flagKernel   = 1 << 0 // the image is the kernel or a module
	flagFreq     = 1 << 1 // Count is a frequency, not a period
	flagCGKernel = 1 << 2 // the call-graph target is in the kernel
	knownFlags   = flagKernel | flagFreq | flagCGKernel
)

// KeyKind says what a sample file's two keys are.
type KeyKind uint32

const (
	// KeyOffset files count samples by offset in a file or the kernel;
	// the second key is 0.
	KeyOffset KeyKind = 1
	// KeyAnon files count samples in anonymous memory by offset from the
	// range's start and the sequence number of the code that was live
	// there (seed 000; 0 where no JIT data knew the address).
	KeyAnon KeyKind = 2
	// KeyCallGraph files count call-graph arcs: the caller's offset in
	// the file's image and the callee's offset in its {cg} image.
	KeyCallGraph KeyKind = 3
)

func (k KeyKind) String() string {
	switch k {
	case KeyOffset:
		return "offset"
	case KeyAnon:
		return "anon"
	case KeyCallGraph:
		return "call-graph"
	}
	return "KeyKind(" + strconv.Itoa(int(k)) + ")"
}

// Header is what a sample file says about its samples, beside its name.
type Header struct {
	Version uint32
	Kind    KeyKind
	// Event, Count, Freq and UnitMask are the event's, as in the name.
	Event    string
	Count    uint64
	Freq     bool
	UnitMask uint64
	// Kernel says the image is the kernel or a module; CGKernel the
	// same of a call-graph file's target.
	Kernel, CGKernel bool
	// AnonStart and AnonEnd are the range of an anonymous image (its
	// offsets are from AnonStart); CGAnonStart and CGAnonEnd those of an
	// anonymous call-graph target.
	AnonStart, AnonEnd     uint64
	CGAnonStart, CGAnonEnd uint64
	// BuildID and Mtime identify the image the offsets are in, as the
	// daemon saw it when it created the file (empty and zero if unknown):
	// a report checks them against the binary it symbolizes with.
	BuildID []byte
	Mtime   time.Time
	// Created is when the file was created.
	Created time.Time
}

var le = binary.LittleEndian

// ErrFormat is wrapped by every error about a sample file's bytes.
var ErrFormat = errors.New("sample file format")

// bucketOf is the hash chain of a key in a table of capacity buckets
// (a power of two). Part of the format: readers check each node is in
// its key's chain.
func bucketOf(k1, k2 uint64, capacity uint64) uint64 {
	h := k1 * 0x9E3779B97F4A7C15
	h ^= k2 * 0xC2B2AE3D27D4EB4F
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 32
	return h & (capacity - 1)
}

// fileSize is the bytes a table of this capacity needs.
func fileSize(capacity uint64) int64 { return headerSize + int64(capacity)*slotSize }

func bucketsOff(capacity uint64) uint64 { return headerSize + capacity*nodeSize }
func nextOff(capacity uint64) uint64    { return headerSize + capacity*(nodeSize+4) }

// encodeHeader writes h's fields into b (headerSize bytes, zero), with
// the table empty: capacity as given, used 1 (node 0).
func encodeHeader(b []byte, h *Header, capacity uint64) error {
	if len(h.Event) == 0 || len(h.Event) > maxEvent {
		return fmt.Errorf("%w: event name of %d bytes (1 to %d)", ErrFormat, len(h.Event), maxEvent)
	}
	if len(h.BuildID) > maxBuildID {
		return fmt.Errorf("%w: build-id of %d bytes (at most %d)", ErrFormat, len(h.BuildID), maxBuildID)
	}
	copy(b[offMagic:], magic)
	le.PutUint32(b[offVersion:], version)
	le.PutUint32(b[offHeaderSize:], headerSize)
	le.PutUint64(b[offCapacity:], capacity)
	le.PutUint64(b[offUsed:], 1)
	le.PutUint32(b[offKind:], uint32(h.Kind))
	var flags uint32
	if h.Kernel {
		flags |= flagKernel
	}
	if h.Freq {
		flags |= flagFreq
	}
	if h.CGKernel {
		flags |= flagCGKernel
	}
	le.PutUint32(b[offFlags:], flags)
	le.PutUint64(b[offCount:], h.Count)
	le.PutUint64(b[offUnitMask:], h.UnitMask)
	le.PutUint64(b[offAnonStart:], h.AnonStart)
	le.PutUint64(b[offAnonEnd:], h.AnonEnd)
	le.PutUint64(b[offCGAnonStart:], h.CGAnonStart)
	le.PutUint64(b[offCGAnonEnd:], h.CGAnonEnd)
	le.PutUint64(b[offMtime:], uint64(unixNano(h.Mtime)))
	le.PutUint64(b[offCreated:], uint64(unixNano(h.Created)))
	b[offBuildIDLen] = byte(len(h.BuildID))
	copy(b[offBuildID:], h.BuildID)
	le.PutUint16(b[offEventLen:], uint16(len(h.Event)))
	copy(b[offEvent:], h.Event)
	return nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// decodeHeader reads and checks the fixed fields (not capacity and used,
// which the table's validation loads atomically).
func decodeHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < headerSize {
		return h, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrFormat, len(b), headerSize)
	}
	if string(b[offMagic:offMagic+len(magic)]) != magic {
		return h, fmt.Errorf("%w: offset 0: not a sample file (bad magic)", ErrFormat)
	}
	h.Version = le.Uint32(b[offVersion:])
	if h.Version != version {
		return h, fmt.Errorf("%w: offset %d: version %d, this reader knows %d", ErrFormat, offVersion, h.Version, version)
	}
	if hs := le.Uint32(b[offHeaderSize:]); hs != headerSize {
		return h, fmt.Errorf("%w: offset %d: header size %d, version %d has %d", ErrFormat, offHeaderSize, hs, version, headerSize)
	}
	h.Kind = KeyKind(le.Uint32(b[offKind:]))
	if h.Kind < KeyOffset || h.Kind > KeyCallGraph {
		return h, fmt.Errorf("%w: offset %d: unknown key kind %d", ErrFormat, offKind, h.Kind)
	}
	flags := le.Uint32(b[offFlags:])
	if flags&^knownFlags != 0 {
		return h, fmt.Errorf("%w: offset %d: unknown flags %#x", ErrFormat, offFlags, flags&^knownFlags)
	}
	h.Kernel, h.Freq, h.CGKernel = flags&flagKernel != 0, flags&flagFreq != 0, flags&flagCGKernel != 0
	h.Count = le.Uint64(b[offCount:])
	h.UnitMask = le.Uint64(b[offUnitMask:])
	h.AnonStart, h.AnonEnd = le.Uint64(b[offAnonStart:]), le.Uint64(b[offAnonEnd:])
	h.CGAnonStart, h.CGAnonEnd = le.Uint64(b[offCGAnonStart:]), le.Uint64(b[offCGAnonEnd:])
	if h.AnonEnd < h.AnonStart || h.CGAnonEnd < h.CGAnonStart {
		return h, fmt.Errorf("%w: offset %d: anonymous range ends before it starts", ErrFormat, offAnonStart)
	}
	h.Mtime = fromUnixNano(int64(le.Uint64(b[offMtime:])))
	h.Created = fromUnixNano(int64(le.Uint64(b[offCreated:])))
	n := int(b[offBuildIDLen])
	if n > maxBuildID {
		return h, fmt.Errorf("%w: offset %d: build-id length %d (at most %d)", ErrFormat, offBuildIDLen, n, maxBuildID)
	}
	if n > 0 {
		h.BuildID = append([]byte(nil), b[offBuildID:offBuildID+n]...)
	}
	n = int(le.Uint16(b[offEventLen:]))
	if n == 0 || n > maxEvent {
		return h, fmt.Errorf("%w: offset %d: event name length %d (1 to %d)", ErrFormat, offEventLen, n, maxEvent)
	}
	h.Event = string(b[offEvent : offEvent+n])
	return h, nil
}

// headerFor is the header a new file of key k gets.
func headerFor(k FileKey, info ImageInfo, now time.Time) Header {
	h := Header{
		Version:  version,
		Kind:     k.Kind(),
		Event:    k.Event,
		Count:    k.Count,
		Freq:     k.Freq,
		UnitMask: k.UnitMask,
		Kernel:   k.Dep.Kind == ImageKernel,
		CGKernel: k.CG.Kind == ImageKernel,
		BuildID:  info.BuildID,
		Mtime:    info.Mtime,
		Created:  now,
	}
	if k.Dep.anon() {
		h.AnonStart, h.AnonEnd = k.Dep.Start, k.Dep.End
	}
	if k.CG.anon() {
		h.CGAnonStart, h.CGAnonEnd = k.CG.Start, k.CG.End
	}
	return h
}

// agrees checks that a file's header says what its name says.
func (h *Header) agrees(k FileKey) error {
	want := headerFor(k, ImageInfo{}, time.Time{})
	switch {
	case h.Kind != want.Kind:
		return fmt.Errorf("%w: header's key kind %s, the name's %s", ErrFormat, h.Kind, want.Kind)
	case h.Event != want.Event || h.Count != want.Count || h.Freq != want.Freq || h.UnitMask != want.UnitMask:
		return fmt.Errorf("%w: header's event is not the name's", ErrFormat)
	case h.Kernel != want.Kernel || h.CGKernel != want.CGKernel:
		return fmt.Errorf("%w: header's kernel flags are not the name's", ErrFormat)
	case h.AnonStart != want.AnonStart || h.AnonEnd != want.AnonEnd ||
		h.CGAnonStart != want.CGAnonStart || h.CGAnonEnd != want.CGAnonEnd:
		return fmt.Errorf("%w: header's anonymous range is not the name's", ErrFormat)
	}
	return nil
}
