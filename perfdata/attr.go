package perfdata

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Attr sizes perf_event_attr has had (PERF_ATTR_SIZE_VER0..8).
const (
	AttrSizeVer0 = 64
	AttrSizeVer1 = 72
	AttrSizeVer2 = 80
	AttrSizeVer3 = 96
	AttrSizeVer4 = 104
	AttrSizeVer5 = 112
	AttrSizeVer6 = 120
	AttrSizeVer7 = 128
	AttrSizeVer8 = 136

	// attrSizeMax bounds the attr size we accept from a file: the kernel
	// grows the struct 8 bytes at a time, and a page is far beyond any
	// version it will reach, so anything larger is corruption.
	attrSizeMax = 4096
)

// Event types (perf_event_attr.type).
const (
	TypeHardware   = 0
	TypeSoftware   = 1
	TypeTracepoint = 2
	TypeHWCache    = 3
	TypeRaw        = 4
	TypeBreakpoint = 5
)

// AttrFlags are the bit fields of perf_event_attr after read_format.
type AttrFlags uint64

// Bits of AttrFlags. PreciseIP is two bits wide; see Attr.PreciseIP.
const (
	FlagDisabled               AttrFlags = 1 << 0
	FlagInherit                AttrFlags = 1 << 1
	FlagPinned                 AttrFlags = 1 << 2
	FlagExclusive              AttrFlags = 1 << 3
	FlagExcludeUser            AttrFlags = 1 << 4
	FlagExcludeKernel          AttrFlags = 1 << 5
	FlagExcludeHV              AttrFlags = 1 << 6
	FlagExcludeIdle            AttrFlags = 1 << 7
	FlagMmap                   AttrFlags = 1 << 8
	FlagComm                   AttrFlags = 1 << 9
	FlagFreq                   AttrFlags = 1 << 10
	FlagInheritStat            AttrFlags = 1 << 11
	FlagEnableOnExec           AttrFlags = 1 << 12
	FlagTask                   AttrFlags = 1 << 13
	FlagWatermark              AttrFlags = 1 << 14
	flagPreciseIPMask          AttrFlags = 3 << 15
	FlagMmapData               AttrFlags = 1 << 17
	FlagSampleIDAll            AttrFlags = 1 << 18
	FlagExcludeHost            AttrFlags = 1 << 19
	FlagExcludeGuest           AttrFlags = 1 << 20
	FlagExcludeCallchainKernel AttrFlags = 1 << 21
	FlagExcludeCallchainUser   AttrFlags = 1 << 22
	FlagMmap2                  AttrFlags = 1 << 23
	FlagCommExec               AttrFlags = 1 << 24
	FlagUseClockID             AttrFlags = 1 << 25
	FlagContextSwitch          AttrFlags = 1 << 26
	FlagWriteBackward          AttrFlags = 1 << 27
	FlagNamespaces             AttrFlags = 1 << 28
	FlagKsymbol                AttrFlags = 1 << 29
	FlagBPFEvent               AttrFlags = 1 << 30
	FlagAuxOutput              AttrFlags = 1 << 31
	FlagCgroup                 AttrFlags = 1 << 32
	FlagTextPoke               AttrFlags = 1 << 33
	FlagBuildID                AttrFlags = 1 << 34
	FlagInheritThread          AttrFlags = 1 << 35
	FlagRemoveOnExec           AttrFlags = 1 << 36
	FlagSigtrap                AttrFlags = 1 << 37
)

var attrFlagNames = []string{
	"disabled", "inherit", "pinned", "exclusive", "exclude_user", "exclude_kernel",
	"exclude_hv", "exclude_idle", "mmap", "comm", "freq", "inherit_stat",
	"enable_on_exec", "task", "watermark", "precise_ip", "precise_ip", "mmap_data",
	"sample_id_all", "exclude_host", "exclude_guest", "exclude_callchain_kernel",
	"exclude_callchain_user", "mmap2", "comm_exec", "use_clockid", "context_switch",
	"write_backward", "namespaces", "ksymbol", "bpf_event", "aux_output", "cgroup",
	"text_poke", "build_id", "inherit_thread", "remove_on_exec", "sigtrap",
}

func (f AttrFlags) String() string { return bitNames(uint64(f), attrFlagNames) }

// Attr is a perf_event_attr together with the sample ids of the events
// opened with it. Field names follow the kernel's.
type Attr struct {
	Type   uint32
	Size   uint32 // as stored in the file; 0 means AttrSizeVer0
	Config uint64
	// SamplePeriod is the period, or the frequency when Flags has FlagFreq.
	SamplePeriod     uint64
	SampleType       SampleFormat
	ReadFormat       ReadFormat
	Flags            AttrFlags
	WakeupEvents     uint32 // or wakeup_watermark when FlagWatermark
	BPType           uint32
	Config1          uint64 // bp_addr, kprobe_func, uprobe_path, config1
	Config2          uint64 // bp_len, kprobe_addr, probe_offset, config2
	BranchSampleType uint64
	SampleRegsUser   uint64
	SampleStackUser  uint32
	ClockID          int32
	SampleRegsIntr   uint64
	AuxWatermark     uint32
	SampleMaxStack   uint16
	AuxSampleSize    uint32
	SigData          uint64
	Config3          uint64
	// Extra holds the bytes of a perf_event_attr larger than the newest
	// version this package knows, so they are written back unchanged.
	Extra []byte

	// IDs are the sample ids of the events opened with this attr.
	IDs []uint64
	// Name is the event's name from the EVENT_DESC feature, if any.
	Name string
}

// Freq reports whether SamplePeriod is a frequency.
func (a *Attr) Freq() bool { return a.Flags&FlagFreq != 0 }

// PreciseIP returns the precise_ip field (0..3).
func (a *Attr) PreciseIP() int { return int(a.Flags&flagPreciseIPMask) >> 15 }

// SetPreciseIP sets the precise_ip field.
func (a *Attr) SetPreciseIP(v int) {
	a.Flags = a.Flags&^flagPreciseIPMask | AttrFlags(v&3)<<15
}

// encodedSize is the size Attr encodes to: its Size, or the newest size
// this package writes.
func (a *Attr) encodedSize() int {
	if a.Size == 0 {
		// Fields the newest version added are written only when used, so
		// that perf releases that predate them read the file.
		if a.Config3 == 0 && len(a.Extra) == 0 {
			return AttrSizeVer7
		}
		return AttrSizeVer8 + len(a.Extra)
	}
	return int(a.Size)
}

// decodeAttr decodes a perf_event_attr of len(b) bytes. The size field
// inside is not trusted for bounds: the container (file header or record)
// says how many bytes there are.
func decodeAttr(b []byte, swap bool) (Attr, error) {
	var a Attr
	if len(b) < AttrSizeVer0 {
		return a, fmt.Errorf("perf_event_attr of %d bytes is shorter than the first version's %d", len(b), AttrSizeVer0)
	}
	d := dec{b: b, swap: swap}
	a.Type = d.u32()
	a.Size = d.u32()
	a.Config = d.u64()
	a.SamplePeriod = d.u64()
	a.SampleType = SampleFormat(d.u64())
	a.ReadFormat = ReadFormat(d.u64())
	raw := binary.LittleEndian.Uint64(b[40:])
	d.off += 8
	if swap {
		// A big-endian compiler allocates bit fields from the most
		// significant bit of each byte; perf carries them across by
		// reversing the bits of each byte and not swapping the bytes.
		raw = reverseBitsInBytes(raw)
	}
	a.Flags = AttrFlags(raw)
	a.WakeupEvents = d.u32()
	a.BPType = d.u32()
	a.Config1 = d.u64()
	if len(b) >= AttrSizeVer1 {
		a.Config2 = d.u64()
	}
	if len(b) >= AttrSizeVer2 {
		a.BranchSampleType = d.u64()
	}
	if len(b) >= AttrSizeVer3 {
		a.SampleRegsUser = d.u64()
		a.SampleStackUser = d.u32()
		a.ClockID = int32(d.u32())
	}
	if len(b) >= AttrSizeVer4 {
		a.SampleRegsIntr = d.u64()
	}
	if len(b) >= AttrSizeVer5 {
		a.AuxWatermark = d.u32()
		a.SampleMaxStack = d.u16()
		d.off += 2
	}
	if len(b) >= AttrSizeVer6 {
		a.AuxSampleSize = d.u32()
		d.off += 4
	}
	if len(b) >= AttrSizeVer7 {
		a.SigData = d.u64()
	}
	if len(b) >= AttrSizeVer8 {
		a.Config3 = d.u64()
	}
	if len(b) > AttrSizeVer8 {
		a.Extra = append([]byte(nil), b[AttrSizeVer8:]...)
	}
	return a, nil
}

// appendAttr appends the little-endian encoding of a, at its encodedSize.
func appendAttr(dst []byte, a *Attr) []byte {
	size := a.encodedSize()
	start := len(dst)
	le := binary.LittleEndian
	dst = le.AppendUint32(dst, a.Type)
	dst = le.AppendUint32(dst, uint32(size))
	dst = le.AppendUint64(dst, a.Config)
	dst = le.AppendUint64(dst, a.SamplePeriod)
	dst = le.AppendUint64(dst, uint64(a.SampleType))
	dst = le.AppendUint64(dst, uint64(a.ReadFormat))
	dst = le.AppendUint64(dst, uint64(a.Flags))
	dst = le.AppendUint32(dst, a.WakeupEvents)
	dst = le.AppendUint32(dst, a.BPType)
	dst = le.AppendUint64(dst, a.Config1)
	dst = le.AppendUint64(dst, a.Config2)
	dst = le.AppendUint64(dst, a.BranchSampleType)
	dst = le.AppendUint64(dst, a.SampleRegsUser)
	dst = le.AppendUint32(dst, a.SampleStackUser)
	dst = le.AppendUint32(dst, uint32(a.ClockID))
	dst = le.AppendUint64(dst, a.SampleRegsIntr)
	dst = le.AppendUint32(dst, a.AuxWatermark)
	dst = le.AppendUint16(dst, a.SampleMaxStack)
	dst = le.AppendUint16(dst, 0)
	dst = le.AppendUint32(dst, a.AuxSampleSize)
	dst = le.AppendUint32(dst, 0)
	dst = le.AppendUint64(dst, a.SigData)
	dst = le.AppendUint64(dst, a.Config3)
	dst = append(dst, a.Extra...)
	// An attr read from an older file keeps its smaller size.
	if n := len(dst) - start; n > size {
		dst = dst[:start+size]
	} else if n < size {
		dst = append(dst, make([]byte, size-n)...)
	}
	return dst
}

func reverseBitsInBytes(v uint64) uint64 {
	var out uint64
	for i := 0; i < 8; i++ {
		out |= uint64(bits.Reverse8(uint8(v>>(8*i)))) << (8 * i)
	}
	return out
}
