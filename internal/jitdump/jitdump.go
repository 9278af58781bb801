package jitdump

import (
	"encoding/binary"
	"errors"
)

// Magic is the header's first word, written in the JIT's byte order.
const Magic = 0x4A695444

// Version is the only header version defined, and the one perf accepts.
const Version = 1

// FlagArchTimestamp says timestamps come from an architecture clock (the
// TSC on x86) rather than CLOCK_MONOTONIC.
const FlagArchTimestamp = 1 << 0

// HeaderSize is the size of the version-1 file header; RecordHeaderSize the
// size of every record's header.
const (
	HeaderSize       = 40
	RecordHeaderSize = 16
)

// Header is the file header.
type Header struct {
	ByteOrder binary.ByteOrder // from the magic; the writer's default is little-endian
	Version   uint32
	Size      uint32 // total_size: bytes in the header, at least HeaderSize
	ElfMach   uint32 // ELF e_machine of the generated code (62 for x86-64)
	Pad1      uint32
	PID       uint32
	Timestamp uint64
	Flags     uint64
}

// RecordType is a record's id.
type RecordType uint32

// Record ids from the specification.
const (
	TypeCodeLoad          RecordType = 0
	TypeCodeMove          RecordType = 1
	TypeCodeDebugInfo     RecordType = 2
	TypeCodeClose         RecordType = 3
	TypeCodeUnwindingInfo RecordType = 4
)

func (t RecordType) String() string {
	switch t {
	case TypeCodeLoad:
		return "CODE_LOAD"
	case TypeCodeMove:
		return "CODE_MOVE"
	case TypeCodeDebugInfo:
		return "CODE_DEBUG_INFO"
	case TypeCodeClose:
		return "CODE_CLOSE"
	case TypeCodeUnwindingInfo:
		return "CODE_UNWINDING_INFO"
	}
	return "UNKNOWN"
}

// Record is one record. Its concrete type is *CodeLoad, *CodeMove,
// *DebugInfo, *CodeClose, *UnwindingInfo or *Unknown.
type Record interface {
	Header() *RecordHeader
}

// RecordHeader is the part every record has.
type RecordHeader struct {
	Type      RecordType
	Size      uint32 // total_size as read; ignored by Writer, which computes it
	Timestamp uint64
	Offset    int64 // file offset of the record; set by Reader
}

// Header returns h; it lets every record type satisfy Record.
func (h *RecordHeader) Header() *RecordHeader { return h }

// CodeLoad describes newly generated code.
type CodeLoad struct {
	RecordHeader
	PID, TID  uint32
	VMA       uint64 // virtual address of the code; usually CodeAddr
	CodeAddr  uint64
	CodeSize  uint64
	CodeIndex uint64 // unique per generation of code; CODE_MOVE refers to it
	Name      string // as read, at most jitname.Max bytes: a longer name is cut, with a marker
	Code      []byte // CodeSize bytes, or empty if the JIT wrote none
}

// CodeMove says code loaded as CodeIndex moved to a new address.
type CodeMove struct {
	RecordHeader
	PID, TID    uint32
	VMA         uint64
	OldCodeAddr uint64
	NewCodeAddr uint64
	CodeSize    uint64
	CodeIndex   uint64
}

// DebugInfo maps addresses of the code at CodeAddr to source lines. It
// precedes the CODE_LOAD it describes.
//
// Line tables are advisory and real JITs get them wrong (Node 20's V8
// writes file names from freed memory, with NULs inside), so a debug record
// whose entries do not parse, or do not fill the record up to its 8-byte
// padding, does not stop the Reader: it comes back with Entries nil and Err
// wrapping ErrMalformed, and the records after it are read as usual.
type DebugInfo struct {
	RecordHeader
	CodeAddr uint64
	Entries  []DebugEntry
	Err      error
}

// DebugEntry is one line-table row.
type DebugEntry struct {
	Addr    uint64
	Line    uint32
	Discrim uint32 // column, or 0
	File    string // resolved: a "\xff" (same as previous) entry holds the previous name
}

// CodeClose marks the end of the JIT's output.
type CodeClose struct {
	RecordHeader
}

// UnwindingInfo carries an .eh_frame_hdr and .eh_frame for the code of the
// CODE_LOAD that follows it.
type UnwindingInfo struct {
	RecordHeader
	EHFrameHdrSize uint64 // bytes of Data that are the EH frame header
	MappedSize     uint64 // bytes of unwind data mapped in the JIT, or 0
	Data           []byte // unwind_data_size bytes; padding after it is dropped
}

// EHFrame is the .eh_frame of the record's data: what precedes the
// .eh_frame_hdr, its last EHFrameHdrSize bytes (as perf inject --jit
// lays them out, genelf.c).
func (u *UnwindingInfo) EHFrame() []byte {
	return u.Data[:uint64(len(u.Data))-min(u.EHFrameHdrSize, uint64(len(u.Data)))]
}

// Unknown is a record with an id this package does not know.
type Unknown struct {
	RecordHeader
	Data []byte // the payload after the record header
}

// Sentinel errors, wrapped with the offset and record number they concern.
var (
	// ErrTruncated means the file ends inside a record: the JIT was killed
	// or is still writing. Every whole record before it was returned.
	ErrTruncated = errors.New("truncated file; the JIT may still be writing or was killed")
	ErrBadMagic  = errors.New("bad magic, not a jitdump file")
	ErrVersion   = errors.New("unsupported version")
	ErrMalformed = errors.New("malformed")
	ErrTooLarge  = errors.New("record larger than the reader's limit")
)
