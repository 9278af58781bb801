package jitlog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jitprof/jitprof/internal/jitname"
)

// Wire layout; docs/jitlog-format.md is the normative description.
const (
	// Magic opens every database.
	Magic = "JITPLOG\x00"
	// Version is the format version this package writes; it reads 1 and 2.
	// Version 2 added the clock record and TSC-stamped enter and exit.
	Version = 2

	// HeaderSize is the size of the file header; the first record follows it.
	HeaderSize = 128

	// ClockMonotonic is the clock id (Linux CLOCK_MONOTONIC) of every time
	// stamp in a database.
	ClockMonotonic = 1

	// Header field offsets.
	offMagic     = 0
	offVersion   = 8
	offHdrSize   = 12
	offPID       = 16
	offClock     = 20
	offPageSize  = 24
	offFlags     = 28
	offStartTime = 32
	offCreated   = 40
	offMaxSize   = 48
	offAppend    = 64 // atomic: next free byte
	offSeq       = 72 // atomic: last sequence number issued
	offCapacity  = 80 // atomic: file size as grown by writers
	offLoggerID  = 88 // atomic: last logger id issued

	// frameSize is the record frame: u32 size, u32 commit word.
	frameSize = 8
	// commitTag is the high half of a published record's commit word; the
	// low half is the record kind. An unpublished record's word is zero.
	commitTag = 0x4a4c << 16

	loadFixed     = 64 // frame + fixed fields of a code load
	moveSize      = 48
	unloadSize    = 32
	enterSize     = 32
	exitSize      = 24
	openFixed     = 24
	closeSize     = 24
	clockSize     = 32
	unwindFixed   = 24 // frame + fixed fields of a code unwind
	lineEntrySize = 12
	bcEntrySize   = 8

	// maxRecord bounds one record, so a corrupt or hostile length can never
	// make a reader allocate more than this.
	maxRecord = 64 << 20
)

// Kind is a record kind.
type Kind uint16

// Record kinds. KindHeader is the file header, which a [Reader] yields first.
const (
	KindHeader      Kind = 0
	KindCodeLoad    Kind = 1
	KindCodeMove    Kind = 2
	KindCodeUnload  Kind = 3
	KindRegionEnter Kind = 4
	KindRegionExit  Kind = 5
	KindLoggerOpen  Kind = 6
	KindLoggerClose Kind = 7
	// KindPad fills the space a writer reserved but could not use (the file
	// reached its maximum size); readers skip it.
	KindPad Kind = 8
	// KindClock pairs a logger's TSC with CLOCK_MONOTONIC (version 2).
	KindClock Kind = 9
	// KindRegionEnterTSC and KindRegionExitTSC are enter and exit stamped
	// with the raw TSC (version 2); a Reader converts them to ns by the
	// logger's clock records and returns them as *EnterRecord, *ExitRecord.
	KindRegionEnterTSC Kind = 10
	KindRegionExitTSC  Kind = 11
	// KindCodeUnwind is the unwinding information (an .eh_frame) of the
	// code of one generation, logged after its load; readers older than
	// it skip it as an UnknownRecord.
	KindCodeUnwind Kind = 12
)

// CodeKinds are the records that say where code is: a reader that names
// code wants these (Reader.Want, Tail.Want), not the regions a JIT
// enters and leaves.
var CodeKinds = []Kind{KindCodeLoad, KindCodeUnwind, KindCodeMove, KindCodeUnload}

var kindNames = [...]string{"header", "code-load", "code-move", "code-unload", "region-enter", "region-exit", "logger-open", "logger-close", "pad", "clock", "region-enter-tsc", "region-exit-tsc", "code-unwind"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint16(k))
}

// Errors callers branch on.
var (
	// ErrTorn reports a record that was reserved but never published because
	// its writer died. Records before it (and, when its size was written,
	// after it) are still returned.
	ErrTorn = errors.New("torn record")
	// ErrFormat reports bytes that are not a valid database.
	ErrFormat = errors.New("malformed jitlog")
	// ErrFull reports a database that reached its maximum size.
	ErrFull = errors.New("jitlog full")
	// ErrClosed reports a call on a closed Logger.
	ErrClosed = errors.New("jitlog closed")
	// ErrTooLarge reports a record bigger than the format allows.
	ErrTooLarge = errors.New("record too large")
)

var le = binary.LittleEndian

// Record is one decoded record; its dynamic type is one of the *…Record
// types or *Header.
type Record interface {
	Kind() Kind
}

// Header is the file header.
type Header struct {
	Version  uint32
	PID      uint32
	ClockID  uint32 // always ClockMonotonic in version 1
	PageSize uint32
	Flags    uint32
	// StartTime is the process start time in clock ticks since boot
	// (/proc/PID/stat field 22); with PID it identifies the process even
	// after its pid is reused.
	StartTime uint64
	Created   uint64 // CLOCK_MONOTONIC ns
	MaxSize   uint64 // writers never grow the file beyond this
	Append    uint64 // writers' hint of where the next record starts; readers ignore it
	Seq       uint64 // last sequence number issued
	Capacity  uint64 // file size as grown by writers
	Loggers   uint32 // logger ids issued
}

// LineEntry maps generated code to a source line.
type LineEntry struct {
	CodeOffset uint32 // from the start of the code
	File       uint32 // index into the load's Files
	Line       uint32
}

// BytecodeEntry maps generated code to a bytecode offset.
type BytecodeEntry struct {
	CodeOffset     uint32
	BytecodeOffset uint32
}

// LoadRecord is a code load: code of Size bytes at Addr named Name,
// generation Seq.
type LoadRecord struct {
	Seq      uint64
	Time     uint64 // CLOCK_MONOTONIC ns
	Addr     uint64
	Size     uint64
	Logger   uint32
	Name     string   // as read, at most jitname.Max bytes: a longer name is cut, with a marker
	Code     []byte   // nil unless the JIT logged its code bytes
	Files    []string // cut as Name is
	Lines    []LineEntry
	Bytecode []BytecodeEntry
}

// MoveRecord says the code of generation Seq now lives at NewAddr.
type MoveRecord struct {
	Seq, Time        uint64
	OldAddr, NewAddr uint64
	Logger           uint32
}

// UnloadRecord says the code of generation Seq was freed.
type UnloadRecord struct {
	Seq, Time uint64
	Logger    uint32
}

// EnterRecord says thread TID entered the code of generation Seq.
type EnterRecord struct {
	Seq, Time   uint64
	TID, Logger uint32
}

// ExitRecord says thread TID left the region it last entered.
type ExitRecord struct {
	Time        uint64
	TID, Logger uint32
}

// OpenRecord says a logger (one JIT) started writing.
type OpenRecord struct {
	Time   uint64
	Logger uint32
	Name   string
}

// CloseRecord says a logger stopped writing.
type CloseRecord struct {
	Time   uint64
	Logger uint32
}

// ClockRecord pairs a TSC value of logger Logger with the CLOCK_MONOTONIC
// time it was read at: readers convert the logger's TSC stamps by them.
type ClockRecord struct {
	TSC, Time uint64
	Logger    uint32
}

// UnwindRecord is the unwinding information of the code of generation
// Seq: an .eh_frame whose pc-relative addresses count from where it
// would be if it followed the code at its first 8-byte boundary (the
// layout of jitdump's unwinding records and of perf inject --jit).
type UnwindRecord struct {
	Seq     uint64
	Logger  uint32
	EHFrame []byte
}

// UnknownRecord keeps a record of a kind this version does not know, so
// newer files still read.
type UnknownRecord struct {
	Type Kind
	Data []byte // the record after its frame
}

func (*Header) Kind() Kind          { return KindHeader }
func (*LoadRecord) Kind() Kind      { return KindCodeLoad }
func (*MoveRecord) Kind() Kind      { return KindCodeMove }
func (*UnloadRecord) Kind() Kind    { return KindCodeUnload }
func (*EnterRecord) Kind() Kind     { return KindRegionEnter }
func (*ExitRecord) Kind() Kind      { return KindRegionExit }
func (*OpenRecord) Kind() Kind      { return KindLoggerOpen }
func (*CloseRecord) Kind() Kind     { return KindLoggerClose }
func (*ClockRecord) Kind() Kind     { return KindClock }
func (*UnwindRecord) Kind() Kind    { return KindCodeUnwind }
func (r *UnknownRecord) Kind() Kind { return r.Type }

func align8(n uint64) uint64 { return (n + 7) &^ 7 }

// loadSize is the encoded size of a code load, or ErrTooLarge.
func loadSize(name string, ld *Load) (uint64, error) {
	n := loadFixed + align8(uint64(len(name)))
	if ld != nil {
		n += align8(uint64(len(ld.Code)))
		var files uint64
		for _, f := range ld.Files {
			files += 4 + uint64(len(f))
		}
		n += align8(files)
		n += align8(uint64(len(ld.Lines)) * lineEntrySize)
		n += uint64(len(ld.Bytecode)) * bcEntrySize
	}
	if n > maxRecord {
		return 0, fmt.Errorf("jitlog: code load %q: %d bytes: %w", name, n, ErrTooLarge)
	}
	return n, nil
}

// putLoad encodes a code load body into b, which is exactly the record's
// size and zeroed; the caller writes the frame.
func putLoad(b []byte, seq, now, addr, size uint64, logger uint32, name string, ld *Load) {
	le.PutUint64(b[8:], seq)
	le.PutUint64(b[16:], now)
	le.PutUint64(b[24:], addr)
	le.PutUint64(b[32:], size)
	le.PutUint32(b[40:], logger)
	le.PutUint32(b[44:], uint32(len(name)))
	p := uint64(loadFixed)
	p += align8(uint64(copy(b[p:], name)))
	if ld == nil {
		return
	}
	le.PutUint32(b[48:], uint32(len(ld.Code)))
	le.PutUint32(b[52:], uint32(len(ld.Files)))
	le.PutUint32(b[56:], uint32(len(ld.Lines)))
	le.PutUint32(b[60:], uint32(len(ld.Bytecode)))
	p += align8(uint64(copy(b[p:], ld.Code)))
	q := p
	for _, f := range ld.Files {
		le.PutUint32(b[q:], uint32(len(f)))
		q += 4 + uint64(copy(b[q+4:], f))
	}
	p = align8(q)
	for _, e := range ld.Lines {
		le.PutUint32(b[p:], e.CodeOffset)
		le.PutUint32(b[p+4:], e.File)
		le.PutUint32(b[p+8:], e.Line)
		p += lineEntrySize
	}
	p = align8(p)
	for _, e := range ld.Bytecode {
		le.PutUint32(b[p:], e.CodeOffset)
		le.PutUint32(b[p+4:], e.BytecodeOffset)
		p += bcEntrySize
	}
}

// decodeHeader decodes and validates the file header.
func decodeHeader(b []byte) (*Header, error) {
	if len(b) < HeaderSize {
		return nil, fmt.Errorf("jitlog: header: %d bytes, want %d: %w", len(b), HeaderSize, ErrFormat)
	}
	if string(b[offMagic:offMagic+8]) != Magic {
		// Never the bytes: a database may be any file put in its place.
		return nil, fmt.Errorf("jitlog: header at offset %d: bad magic: %w", offMagic, ErrFormat)
	}
	h := &Header{
		Version:   le.Uint32(b[offVersion:]),
		PID:       le.Uint32(b[offPID:]),
		ClockID:   le.Uint32(b[offClock:]),
		PageSize:  le.Uint32(b[offPageSize:]),
		Flags:     le.Uint32(b[offFlags:]),
		StartTime: le.Uint64(b[offStartTime:]),
		Created:   le.Uint64(b[offCreated:]),
		MaxSize:   le.Uint64(b[offMaxSize:]),
		Append:    le.Uint64(b[offAppend:]),
		Seq:       le.Uint64(b[offSeq:]),
		Capacity:  le.Uint64(b[offCapacity:]),
		Loggers:   le.Uint32(b[offLoggerID:]),
	}
	if h.Version < 1 || h.Version > Version {
		return nil, fmt.Errorf("jitlog: header: version %d, this reader knows %d: %w", h.Version, Version, ErrFormat)
	}
	if hs := le.Uint32(b[offHdrSize:]); hs != HeaderSize {
		return nil, fmt.Errorf("jitlog: header: header size %d, want %d: %w", hs, HeaderSize, ErrFormat)
	}
	return h, nil
}

// decodeRecord decodes one published record; b is the whole record,
// frame included, and its length is the frame's size.
func decodeRecord(kind Kind, b []byte) (Record, error) {
	need := func(n int) error {
		if len(b) < n {
			return fmt.Errorf("%v record: %d bytes, want at least %d: %w", kind, len(b), n, ErrFormat)
		}
		return nil
	}
	switch kind {
	case KindCodeLoad:
		return decodeLoad(b)
	case KindCodeMove:
		if err := need(moveSize); err != nil {
			return nil, err
		}
		return &MoveRecord{Seq: le.Uint64(b[8:]), Time: le.Uint64(b[16:]), OldAddr: le.Uint64(b[24:]), NewAddr: le.Uint64(b[32:]), Logger: le.Uint32(b[40:])}, nil
	case KindCodeUnload:
		if err := need(unloadSize); err != nil {
			return nil, err
		}
		return &UnloadRecord{Seq: le.Uint64(b[8:]), Time: le.Uint64(b[16:]), Logger: le.Uint32(b[24:])}, nil
	case KindRegionEnter, KindRegionEnterTSC:
		if err := need(enterSize); err != nil {
			return nil, err
		}
		return &EnterRecord{Seq: le.Uint64(b[8:]), Time: le.Uint64(b[16:]), TID: le.Uint32(b[24:]), Logger: le.Uint32(b[28:])}, nil
	case KindRegionExit, KindRegionExitTSC:
		if err := need(exitSize); err != nil {
			return nil, err
		}
		return &ExitRecord{Time: le.Uint64(b[8:]), TID: le.Uint32(b[16:]), Logger: le.Uint32(b[20:])}, nil
	case KindLoggerOpen:
		if err := need(openFixed); err != nil {
			return nil, err
		}
		n := uint64(le.Uint32(b[20:]))
		if openFixed+n > uint64(len(b)) {
			return nil, fmt.Errorf("logger-open record: name of %d bytes overruns record of %d: %w", n, len(b), ErrFormat)
		}
		return &OpenRecord{Time: le.Uint64(b[8:]), Logger: le.Uint32(b[16:]), Name: jitname.Cap(b[openFixed : openFixed+n])}, nil
	case KindLoggerClose:
		if err := need(closeSize); err != nil {
			return nil, err
		}
		return &CloseRecord{Time: le.Uint64(b[8:]), Logger: le.Uint32(b[16:])}, nil
	case KindClock:
		if err := need(clockSize); err != nil {
			return nil, err
		}
		return &ClockRecord{TSC: le.Uint64(b[8:]), Time: le.Uint64(b[16:]), Logger: le.Uint32(b[24:])}, nil
	case KindCodeUnwind:
		if err := need(unwindFixed); err != nil {
			return nil, err
		}
		n := uint64(le.Uint32(b[20:]))
		if unwindFixed+n > uint64(len(b)) {
			return nil, fmt.Errorf("code-unwind record: .eh_frame of %d bytes overruns record of %d: %w", n, len(b), ErrFormat)
		}
		return &UnwindRecord{Seq: le.Uint64(b[8:]), Logger: le.Uint32(b[16:]), EHFrame: append([]byte(nil), b[unwindFixed:unwindFixed+n]...)}, nil
	}
	return &UnknownRecord{Type: kind, Data: append([]byte(nil), b[frameSize:]...)}, nil
}

func decodeLoad(b []byte) (Record, error) {
	if len(b) < loadFixed {
		return nil, fmt.Errorf("code-load record: %d bytes, want at least %d: %w", len(b), loadFixed, ErrFormat)
	}
	r := &LoadRecord{
		Seq:    le.Uint64(b[8:]),
		Time:   le.Uint64(b[16:]),
		Addr:   le.Uint64(b[24:]),
		Size:   le.Uint64(b[32:]),
		Logger: le.Uint32(b[40:]),
	}
	nameLen := uint64(le.Uint32(b[44:]))
	codeLen := uint64(le.Uint32(b[48:]))
	nFiles := uint64(le.Uint32(b[52:]))
	nLines := uint64(le.Uint32(b[56:]))
	nBC := uint64(le.Uint32(b[60:]))
	end := uint64(len(b))
	p := uint64(loadFixed)
	// take returns the next n bytes, or nil and false if they overrun.
	take := func(n uint64) ([]byte, bool) {
		if n > end-p {
			return nil, false
		}
		s := b[p : p+n]
		p += n
		return s, true
	}
	bad := func(what string) error {
		return fmt.Errorf("code-load record seq %d: %s overruns record of %d bytes: %w", r.Seq, what, end, ErrFormat)
	}
	s, ok := take(nameLen)
	if !ok {
		return nil, bad("name")
	}
	r.Name = jitname.Cap(s)
	p = min(align8(p), end)
	if codeLen > 0 {
		if s, ok = take(codeLen); !ok {
			return nil, bad("code bytes")
		}
		r.Code = append([]byte(nil), s...)
		p = min(align8(p), end)
	}
	// Each file costs at least 4 bytes, so the count is bounded by the
	// record before anything is allocated.
	if nFiles > (end-p)/4 {
		return nil, bad("file table")
	}
	if nFiles > 0 {
		r.Files = make([]string, nFiles)
		for i := range r.Files {
			s, ok := take(4)
			if !ok {
				return nil, bad("file table")
			}
			if s, ok = take(uint64(le.Uint32(s))); !ok {
				return nil, bad("file name")
			}
			r.Files[i] = jitname.Cap(s)
		}
		p = min(align8(p), end)
	}
	if nLines > 0 {
		s, ok := take(nLines * lineEntrySize)
		if !ok {
			return nil, bad("line table")
		}
		r.Lines = make([]LineEntry, nLines)
		for i := range r.Lines {
			e := s[i*lineEntrySize:]
			r.Lines[i] = LineEntry{CodeOffset: le.Uint32(e), File: le.Uint32(e[4:]), Line: le.Uint32(e[8:])}
			if r.Lines[i].File >= uint32(nFiles) {
				return nil, fmt.Errorf("code-load record seq %d: line entry %d names file %d of %d: %w", r.Seq, i, r.Lines[i].File, nFiles, ErrFormat)
			}
		}
		p = min(align8(p), end)
	}
	if nBC > 0 {
		s, ok := take(nBC * bcEntrySize)
		if !ok {
			return nil, bad("bytecode table")
		}
		r.Bytecode = make([]BytecodeEntry, nBC)
		for i := range r.Bytecode {
			e := s[i*bcEntrySize:]
			r.Bytecode[i] = BytecodeEntry{CodeOffset: le.Uint32(e), BytecodeOffset: le.Uint32(e[4:])}
		}
	}
	return r, nil
}

// clocks converts loggers' TSC stamps to CLOCK_MONOTONIC ns by their
// clock records, in file order: from the latest pair, at the rate between
// the first and the latest, so no later record is needed and the error is
// about one pair's (the writers recalibrate at doubling intervals).
type clocks map[uint32]*calibration

type calibration struct {
	first, last ClockRecord
}

func (c clocks) add(r *ClockRecord) {
	if k := c[r.Logger]; k != nil {
		k.last = *r
		return
	}
	c[r.Logger] = &calibration{first: *r, last: *r}
}

// convert rewrites the time of a TSC-stamped enter or exit in place.
func (c clocks) convert(kind Kind, rec Record) error {
	var t *uint64
	var logger uint32
	switch r := rec.(type) {
	case *EnterRecord:
		t, logger = &r.Time, r.Logger
	case *ExitRecord:
		t, logger = &r.Time, r.Logger
	}
	k := c[logger]
	if k == nil || k.last.TSC <= k.first.TSC || k.last.Time <= k.first.Time {
		return fmt.Errorf("%v record of logger %d before two of its clock records: %w", kind, logger, ErrFormat)
	}
	rate := float64(k.last.Time-k.first.Time) / float64(k.last.TSC-k.first.TSC)
	d := float64(int64(*t - k.last.TSC))
	*t = uint64(int64(k.last.Time) + int64(d*rate))
	return nil
}
