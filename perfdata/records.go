package perfdata

// Record is one record of the data section. Its concrete type is one of
// the pointer types in this file; a record the package does not decode is
// an *Unknown. The Reader reuses record values: a record and the slices in
// it are valid only until the next call to Reader.Next.
type Record interface {
	Type() RecordType
	// Base returns the fields every record has.
	Base() *Common
}

// Common holds the header misc bits, the position of a record, the attr it
// belongs to and its sample id fields. For a SAMPLE the id fields come from
// the sample itself; for other kernel records from the sample_id trailer,
// present when the attr has sample_id_all. Which of them are valid is told
// by Attr.SampleType.
type Common struct {
	Misc   uint16
	Offset int64 // file offset of the record header (pipe: bytes from the start of the stream)
	Attr   *Attr // nil for user records and when no attr could be found

	PID, TID uint32 // if SampleTID
	Time     uint64 // if SampleTime
	ID       uint64 // if SampleID or SampleIdentifier
	StreamID uint64 // if SampleStreamID
	CPU      uint32 // if SampleCPU
	CPURes   uint32 // the reserved half of the CPU word, kept for round trips
}

// Base implements Record.
func (c *Common) Base() *Common { return c }

// CPUMode returns the MiscCPUMode bits of the header.
func (c *Common) CPUMode() uint16 { return c.Misc & MiscCPUModeMask }

// Has reports whether the sample id fields of the record include f.
func (c *Common) Has(f SampleFormat) bool { return c.Attr != nil && c.Attr.SampleType&f != 0 }

// Timestamp is the record's time, 0 when its attr does not sample it.
func (c *Common) Timestamp() uint64 {
	if c.Has(SampleTime) {
		return c.Time
	}
	return 0
}

// Sample is PERF_RECORD_SAMPLE. Fields are valid when the attr's
// SampleType has the bit named in their comment.
type Sample struct {
	Common
	IP          uint64     // SampleIP
	Addr        uint64     // SampleAddr
	Period      uint64     // SamplePeriod, else the attr's fixed period
	Read        ReadValues // SampleRead
	Callchain   []uint64   // SampleCallchain, including PERF_CONTEXT_* markers
	Raw         []byte     // SampleRaw
	BranchHWIdx uint64     // SampleBranchStack with BranchSampleHWIndex
	Branches    []Branch   // SampleBranchStack
	RegsUserABI uint64     // SampleRegsUser
	RegsUser    []uint64   // SampleRegsUser, one per bit of Attr.SampleRegsUser
	StackUser   []byte     // SampleStackUser
	StackDyn    uint64     // SampleStackUser: dyn_size, when StackUser is not empty
	Weight      uint64     // SampleWeight or SampleWeightStruct (the raw union)
	DataSrc     uint64     // SampleDataSrc
	Transaction uint64     // SampleTransaction
	RegsIntrABI uint64     // SampleRegsIntr
	RegsIntr    []uint64   // SampleRegsIntr
	PhysAddr    uint64     // SamplePhysAddr
	Cgroup      uint64     // SampleCgroup
	DataPage    uint64     // SampleDataPageSize
	CodePage    uint64     // SampleCodePageSize
	Aux         []byte     // SampleAux
}

// Type implements Record.
func (*Sample) Type() RecordType { return RecordSample }

// ReadValues is the read_format part of a sample or READ record.
type ReadValues struct {
	TimeEnabled uint64 // ReadTotalTimeEnabled
	TimeRunning uint64 // ReadTotalTimeRunning
	Values      []ReadValue
}

// ReadValue is one counter of ReadValues.
type ReadValue struct {
	Value uint64
	ID    uint64 // ReadID
	Lost  uint64 // ReadLost
}

// Branch is one entry of a sampled branch stack.
type Branch struct {
	From, To, Flags uint64
}

// Callchain context markers (enum perf_callchain_context): an entry at or
// above CallchainContextMax is not an address but says whose frames follow.
const (
	CallchainHV          = ^uint64(32 - 1)   // -32
	CallchainKernel      = ^uint64(128 - 1)  // -128
	CallchainUser        = ^uint64(512 - 1)  // -512
	CallchainGuest       = ^uint64(2048 - 1) // -2048
	CallchainGuestKernel = ^uint64(2176 - 1) // -2176
	CallchainGuestUser   = ^uint64(2560 - 1) // -2560
	CallchainContextMax  = ^uint64(4095 - 1) // -4095
)

// Mmap is PERF_RECORD_MMAP or, when Version2, PERF_RECORD_MMAP2.
type Mmap struct {
	Common
	Version2 bool
	PID, TID uint32 // of the record body (the Common ones come from sample_id)
	Addr     uint64
	Len      uint64
	Pgoff    uint64
	// MMAP2 only: either the device and inode, or, when Misc has
	// MiscMmapBuildID, the build-id.
	Maj, Min      uint32
	Ino           uint64
	InoGeneration uint64
	BuildID       []byte
	Prot, Flags   uint32
	Filename      string
}

// Type implements Record.
func (m *Mmap) Type() RecordType {
	if m.Version2 {
		return RecordMmap2
	}
	return RecordMmap
}

// Comm is PERF_RECORD_COMM; Exec says it came from an exec.
type Comm struct {
	Common
	PID, TID uint32
	Comm     string
}

// Type implements Record.
func (*Comm) Type() RecordType { return RecordComm }

// Exec reports whether the comm changed because of an exec.
func (c *Comm) Exec() bool { return c.Misc&MiscCommExec != 0 }

// Fork is PERF_RECORD_FORK.
type Fork struct {
	Common
	PID, PPID, TID, PTID uint32
	ForkTime             uint64
}

// Type implements Record.
func (*Fork) Type() RecordType { return RecordFork }

// Exit is PERF_RECORD_EXIT.
type Exit struct {
	Common
	PID, PPID, TID, PTID uint32
	ExitTime             uint64
}

// Type implements Record.
func (*Exit) Type() RecordType { return RecordExit }

// Lost is PERF_RECORD_LOST: the ring buffer was full.
type Lost struct {
	Common
	LostID uint64
	Lost   uint64
}

// Type implements Record.
func (*Lost) Type() RecordType { return RecordLost }

// LostSamples is PERF_RECORD_LOST_SAMPLES.
type LostSamples struct {
	Common
	Lost uint64
}

// Type implements Record.
func (*LostSamples) Type() RecordType { return RecordLostSamples }

// Throttle is PERF_RECORD_THROTTLE, or PERF_RECORD_UNTHROTTLE when Unthrottle.
type Throttle struct {
	Common
	Unthrottle    bool
	ThrottleTime  uint64
	ThrottleID    uint64
	ThrottleStrID uint64
}

// Type implements Record.
func (t *Throttle) Type() RecordType {
	if t.Unthrottle {
		return RecordUnthrottle
	}
	return RecordThrottle
}

// Switch is PERF_RECORD_SWITCH or, when CPUWide, PERF_RECORD_SWITCH_CPU_WIDE.
type Switch struct {
	Common
	CPUWide                  bool
	NextPrevPID, NextPrevTID uint32 // CPUWide only
}

// Type implements Record.
func (s *Switch) Type() RecordType {
	if s.CPUWide {
		return RecordSwitchCPUWide
	}
	return RecordSwitch
}

// Out reports a switch out of the task (else into it).
func (s *Switch) Out() bool { return s.Misc&MiscSwitchOut != 0 }

// Ksymbol is PERF_RECORD_KSYMBOL: kernel code (BPF, trampolines) appeared
// or, with KsymFlagUnregister, went away.
type Ksymbol struct {
	Common
	Addr     uint64
	Len      uint32
	KsymType uint16
	KFlags   uint16
	Name     string
}

// KsymFlagUnregister marks a Ksymbol that removes the symbol.
const KsymFlagUnregister = 1

// Type implements Record.
func (*Ksymbol) Type() RecordType { return RecordKsymbol }

// BPFEvent is PERF_RECORD_BPF_EVENT.
type BPFEvent struct {
	Common
	BPFType  uint16
	BPFFlags uint16
	BPFID    uint32
	Tag      [8]byte
}

// Type implements Record.
func (*BPFEvent) Type() RecordType { return RecordBPFEvent }

// Cgroup is PERF_RECORD_CGROUP.
type Cgroup struct {
	Common
	CgroupID uint64
	Path     string
}

// Type implements Record.
func (*Cgroup) Type() RecordType { return RecordCgroup }

// Namespaces is PERF_RECORD_NAMESPACES.
type Namespaces struct {
	Common
	PID, TID   uint32
	Namespaces []NamespaceLink
}

// NamespaceLink is one (dev, inode) pair of a Namespaces record.
type NamespaceLink struct{ Dev, Ino uint64 }

// Type implements Record.
func (*Namespaces) Type() RecordType { return RecordNamespaces }

// TextPoke is PERF_RECORD_TEXT_POKE: the kernel modified its text.
type TextPoke struct {
	Common
	Addr     uint64
	Old, New []byte
}

// Type implements Record.
func (*TextPoke) Type() RecordType { return RecordTextPoke }

// Read is PERF_RECORD_READ.
type Read struct {
	Common
	PID, TID uint32
	Values   ReadValues
}

// Type implements Record.
func (*Read) Type() RecordType { return RecordRead }

// Aux is PERF_RECORD_AUX.
type Aux struct {
	Common
	AuxOffset, AuxSize, AuxFlags uint64
}

// Type implements Record.
func (*Aux) Type() RecordType { return RecordAux }

// ItraceStart is PERF_RECORD_ITRACE_START.
type ItraceStart struct {
	Common
	PID, TID uint32
}

// Type implements Record.
func (*ItraceStart) Type() RecordType { return RecordItraceStart }

// AuxOutputHWID is PERF_RECORD_AUX_OUTPUT_HW_ID.
type AuxOutputHWID struct {
	Common
	HWID uint64
}

// Type implements Record.
func (*AuxOutputHWID) Type() RecordType { return RecordAuxOutputHWID }

// HeaderAttr is perf's PERF_RECORD_HEADER_ATTR, which carries an attr and
// its ids in pipe mode. The Reader adds it to File.Attrs.
type HeaderAttr struct {
	Common
	EventAttr *Attr
}

// Type implements Record.
func (*HeaderAttr) Type() RecordType { return RecordHeaderAttr }

// HeaderBuildID is perf's PERF_RECORD_HEADER_BUILD_ID, also the element of
// the BUILD_ID feature.
type HeaderBuildID struct {
	Common
	BuildID BuildID
}

// Type implements Record.
func (*HeaderBuildID) Type() RecordType { return RecordHeaderBuildID }

// HeaderEventType is perf's PERF_RECORD_HEADER_EVENT_TYPE, which perf has
// skipped since Linux 3.x: in pipe mode, a part of File.EventTypes.
type HeaderEventType struct {
	Common
	Data []byte
}

// Type implements Record.
func (*HeaderEventType) Type() RecordType { return RecordHeaderEventType }

// FinishedRound is perf's PERF_RECORD_FINISHED_ROUND: every record before
// it with a time below the previous round's maximum can be sorted.
type FinishedRound struct{ Common }

// Type implements Record.
func (*FinishedRound) Type() RecordType { return RecordFinishedRound }

// FinishedInit is perf's PERF_RECORD_FINISHED_INIT: the end of the
// synthesized records of a pipe-mode stream.
type FinishedInit struct{ Common }

// Type implements Record.
func (*FinishedInit) Type() RecordType { return RecordFinishedInit }

// IDIndex is perf's PERF_RECORD_ID_INDEX.
type IDIndex struct {
	Common
	Entries []IDIndexEntry
}

// IDIndexEntry maps a sample id to its attr index, CPU and thread.
type IDIndexEntry struct{ ID, Idx, CPU, TID uint64 }

// Type implements Record.
func (*IDIndex) Type() RecordType { return RecordIDIndex }

// TimeConv is perf's PERF_RECORD_TIME_CONV: how to turn TSC values into
// perf time. Ext says the record has the fields added in Linux 5.11.
type TimeConv struct {
	Common
	TimeShift, TimeMult, TimeZero uint64
	Ext                           bool
	TimeCycles, TimeMask          uint64
	CapUserTimeZero               bool
	CapUserTimeShort              bool
}

// Type implements Record.
func (*TimeConv) Type() RecordType { return RecordTimeConv }

// HeaderFeature is perf's PERF_RECORD_HEADER_FEATURE: a feature section in
// pipe mode. The Reader adds it to File.Features.
type HeaderFeature struct {
	Common
	Feature Feature
	Data    []byte
}

// Type implements Record.
func (*HeaderFeature) Type() RecordType { return RecordHeaderFeature }

// Unknown is a record the package keeps as bytes: a newer kernel's record,
// or one of perf's records that reports do not need (AUXTRACE, STAT, ...).
// Payload holds the bytes that AUXTRACE and TRACING_DATA records carry
// after their record in the stream.
type Unknown struct {
	Common
	RecType RecordType
	Data    []byte // the body after the 8-byte header
	Payload []byte
}

// Type implements Record.
func (u *Unknown) Type() RecordType { return u.RecType }
