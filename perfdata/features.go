package perfdata

import (
	"bytes"
	"fmt"
	"sort"
)

// Feature is a bit of the header's feature bitmap (HEADER_* in perf's
// util/header.h). Each set bit has a section after the data.
type Feature int

// Feature bits perf defines.
const (
	FeatTracingData    Feature = 1
	FeatBuildID        Feature = 2
	FeatHostname       Feature = 3
	FeatOSRelease      Feature = 4
	FeatVersion        Feature = 5
	FeatArch           Feature = 6
	FeatNrCPUs         Feature = 7
	FeatCPUDesc        Feature = 8
	FeatCPUID          Feature = 9
	FeatTotalMem       Feature = 10
	FeatCmdline        Feature = 11
	FeatEventDesc      Feature = 12
	FeatCPUTopology    Feature = 13
	FeatNUMATopology   Feature = 14
	FeatBranchStack    Feature = 15
	FeatPMUMappings    Feature = 16
	FeatGroupDesc      Feature = 17
	FeatAuxtrace       Feature = 18
	FeatStat           Feature = 19
	FeatCache          Feature = 20
	FeatSampleTime     Feature = 21
	FeatMemTopology    Feature = 22
	FeatClockID        Feature = 23
	FeatDirFormat      Feature = 24
	FeatBPFProgInfo    Feature = 25
	FeatBPFBTF         Feature = 26
	FeatCompressed     Feature = 27
	FeatCPUPMUCaps     Feature = 28
	FeatClockData      Feature = 29
	FeatHybridTopology Feature = 30
	FeatPMUCaps        Feature = 31

	// FeatJitprof is where jitprof before its bundle version 2 put the JIT
	// data of the recorded processes, far above perf's range. perf report
	// skips it, but perf 6.1's inject looks every set bit up in its table
	// of known features and crashes on it, so jitprof now writes the
	// event_types section instead (File.EventTypes) and only reads this.
	FeatJitprof Feature = 200

	// NumFeatures is the width of the bitmap (HEADER_FEAT_BITS).
	NumFeatures = 256
)

var featureNames = map[Feature]string{
	FeatTracingData: "TRACING_DATA", FeatBuildID: "BUILD_ID", FeatHostname: "HOSTNAME",
	FeatOSRelease: "OSRELEASE", FeatVersion: "VERSION", FeatArch: "ARCH",
	FeatNrCPUs: "NRCPUS", FeatCPUDesc: "CPUDESC", FeatCPUID: "CPUID",
	FeatTotalMem: "TOTAL_MEM", FeatCmdline: "CMDLINE", FeatEventDesc: "EVENT_DESC",
	FeatCPUTopology: "CPU_TOPOLOGY", FeatNUMATopology: "NUMA_TOPOLOGY",
	FeatBranchStack: "BRANCH_STACK", FeatPMUMappings: "PMU_MAPPINGS",
	FeatGroupDesc: "GROUP_DESC", FeatAuxtrace: "AUXTRACE", FeatStat: "STAT",
	FeatCache: "CACHE", FeatSampleTime: "SAMPLE_TIME", FeatMemTopology: "MEM_TOPOLOGY",
	FeatClockID: "CLOCKID", FeatDirFormat: "DIR_FORMAT", FeatBPFProgInfo: "BPF_PROG_INFO",
	FeatBPFBTF: "BPF_BTF", FeatCompressed: "COMPRESSED", FeatCPUPMUCaps: "CPU_PMU_CAPS",
	FeatClockData: "CLOCK_DATA", FeatHybridTopology: "HYBRID_TOPOLOGY",
	FeatPMUCaps: "PMU_CAPS", FeatJitprof: "JITPROF",
}

func (f Feature) String() string {
	if s, ok := featureNames[f]; ok {
		return s
	}
	return fmt.Sprintf("FEAT%d", int(f))
}

// Features holds the feature sections of a file as raw bytes in the file's
// byte order, with typed accessors for the sections reports use. Raw
// storage makes unknown features and round trips lossless.
type Features struct {
	raw  map[Feature][]byte
	swap bool
}

// Has reports whether the feature is present.
func (fs *Features) Has(f Feature) bool { _, ok := fs.raw[f]; return ok }

// Raw returns the section's bytes.
func (fs *Features) Raw(f Feature) ([]byte, bool) { b, ok := fs.raw[f]; return b, ok }

// List returns the present features in bit order.
func (fs *Features) List() []Feature {
	l := make([]Feature, 0, len(fs.raw))
	for f := range fs.raw {
		l = append(l, f)
	}
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	return l
}

// SetRaw sets a section's bytes, little-endian (the byte order the Writer
// writes), or removes it when b is nil.
func (fs *Features) SetRaw(f Feature, b []byte) {
	if fs.swap {
		// Mixing orders would corrupt the file; once set by a caller the
		// sections are ours, in our byte order.
		fs.toLittleEndian()
	}
	if b == nil {
		delete(fs.raw, f)
		return
	}
	if fs.raw == nil {
		fs.raw = map[Feature][]byte{}
	}
	fs.raw[f] = b
}

// toLittleEndian re-encodes the sections of a byte-swapped file that this
// package understands and drops the rest, which it cannot swap.
func (fs *Features) toLittleEndian() {
	old := fs.raw
	fs.raw, fs.swap = map[Feature][]byte{}, false
	src := Features{raw: old, swap: true}
	for f := range old {
		switch f {
		case FeatHostname, FeatOSRelease, FeatVersion, FeatArch, FeatCPUDesc, FeatCPUID:
			if s, err := src.String(f); err == nil {
				fs.SetString(f, s)
			}
		case FeatNrCPUs:
			if a, o, err := src.NrCPUs(); err == nil {
				fs.SetNrCPUs(a, o)
			}
		case FeatTotalMem, FeatClockID:
			if v, err := src.u64Feature(f); err == nil {
				fs.raw[f] = le.AppendUint64(nil, v)
			}
		case FeatCmdline:
			if l, err := src.Cmdline(); err == nil {
				fs.SetCmdline(l)
			}
		case FeatBuildID:
			if l, err := src.BuildIDs(); err == nil {
				fs.SetBuildIDs(l)
			}
		case FeatSampleTime:
			if a, b, err := src.SampleTime(); err == nil {
				fs.SetSampleTime(a, b)
			}
		}
	}
}

func (fs *Features) section(f Feature) (dec, error) {
	b, ok := fs.raw[f]
	if !ok {
		return dec{}, fmt.Errorf("feature %v: %w", f, ErrNoFeature)
	}
	return dec{b: b, swap: fs.swap}, nil
}

// perf strings: u32 length (including NUL and padding to 64 bytes), then
// the bytes.
func readPerfString(d *dec) (string, error) {
	n := d.u32()
	if d.short || uint64(n) > uint64(len(d.b)-d.off) {
		return "", fmt.Errorf("string of %d bytes at offset %d runs past the section's %d bytes", n, d.off, len(d.b))
	}
	b := d.bytes(uint64(n))
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b), nil
}

func appendPerfString(dst []byte, s string) []byte {
	n := (len(s) + 1 + 63) &^ 63
	dst = le.AppendUint32(dst, uint32(n))
	dst = append(dst, s...)
	return append(dst, make([]byte, n-len(s))...)
}

// String returns a string feature: HOSTNAME, OSRELEASE, VERSION, ARCH,
// CPUDESC or CPUID.
func (fs *Features) String(f Feature) (string, error) {
	d, err := fs.section(f)
	if err != nil {
		return "", err
	}
	s, err := readPerfString(&d)
	if err != nil {
		return "", fmt.Errorf("feature %v: %w", f, err)
	}
	return s, nil
}

// SetString sets a string feature.
func (fs *Features) SetString(f Feature, s string) { fs.SetRaw(f, appendPerfString(nil, s)) }

func (fs *Features) u64Feature(f Feature) (uint64, error) {
	d, err := fs.section(f)
	if err != nil {
		return 0, err
	}
	v := d.u64()
	if d.short {
		return 0, fmt.Errorf("feature %v: %d bytes, want 8", f, len(d.b))
	}
	return v, nil
}

// TotalMem returns the TOTAL_MEM feature in kB.
func (fs *Features) TotalMem() (uint64, error) { return fs.u64Feature(FeatTotalMem) }

// SetTotalMem sets TOTAL_MEM in kB.
func (fs *Features) SetTotalMem(kB uint64) { fs.SetRaw(FeatTotalMem, le.AppendUint64(nil, kB)) }

// ClockResolution returns the CLOCKID feature: the resolution of the
// sampling clock in ns.
func (fs *Features) ClockResolution() (uint64, error) { return fs.u64Feature(FeatClockID) }

// SetClockResolution sets the CLOCKID feature.
func (fs *Features) SetClockResolution(ns uint64) {
	fs.SetRaw(FeatClockID, le.AppendUint64(nil, ns))
}

// NrCPUs returns the NRCPUS feature: CPUs available and online.
func (fs *Features) NrCPUs() (avail, online uint32, err error) {
	d, err := fs.section(FeatNrCPUs)
	if err != nil {
		return 0, 0, err
	}
	avail, online = d.u32(), d.u32()
	if d.short {
		return 0, 0, fmt.Errorf("feature NRCPUS: %d bytes, want 8", len(d.b))
	}
	return avail, online, nil
}

// SetNrCPUs sets the NRCPUS feature.
func (fs *Features) SetNrCPUs(avail, online uint32) {
	fs.SetRaw(FeatNrCPUs, le.AppendUint32(le.AppendUint32(nil, avail), online))
}

// Cmdline returns the CMDLINE feature: the recording command's argv.
func (fs *Features) Cmdline() ([]string, error) {
	d, err := fs.section(FeatCmdline)
	if err != nil {
		return nil, err
	}
	return readStringList(&d, FeatCmdline)
}

func readStringList(d *dec, f Feature) ([]string, error) {
	n := d.u32()
	if d.short || uint64(n) > uint64(len(d.b)-d.off)/4 {
		return nil, fmt.Errorf("feature %v: list of %d strings in %d bytes", f, n, len(d.b))
	}
	l := make([]string, 0, n)
	for i := uint32(0); i < n; i++ {
		s, err := readPerfString(d)
		if err != nil {
			return nil, fmt.Errorf("feature %v: string %d: %w", f, i, err)
		}
		l = append(l, s)
	}
	return l, nil
}

func appendStringList(dst []byte, l []string) []byte {
	dst = le.AppendUint32(dst, uint32(len(l)))
	for _, s := range l {
		dst = appendPerfString(dst, s)
	}
	return dst
}

// SetCmdline sets the CMDLINE feature.
func (fs *Features) SetCmdline(argv []string) { fs.SetRaw(FeatCmdline, appendStringList(nil, argv)) }

// SampleTime returns the SAMPLE_TIME feature: first and last sample time.
func (fs *Features) SampleTime() (first, last uint64, err error) {
	d, err := fs.section(FeatSampleTime)
	if err != nil {
		return 0, 0, err
	}
	first, last = d.u64(), d.u64()
	if d.short {
		return 0, 0, fmt.Errorf("feature SAMPLE_TIME: %d bytes, want 16", len(d.b))
	}
	return first, last, nil
}

// SetSampleTime sets the SAMPLE_TIME feature.
func (fs *Features) SetSampleTime(first, last uint64) {
	fs.SetRaw(FeatSampleTime, le.AppendUint64(le.AppendUint64(nil, first), last))
}

// ClockData is the CLOCK_DATA feature: a reference point between the
// sampling clock and the wall clock, so times can be shown as dates.
type ClockData struct {
	Version uint32
	ClockID uint32
	WallNS  uint64 // time of day, ns since the epoch
	ClockNS uint64 // the sampling clock at the same moment
}

// ClockData returns the CLOCK_DATA feature.
func (fs *Features) ClockData() (ClockData, error) {
	d, err := fs.section(FeatClockData)
	if err != nil {
		return ClockData{}, err
	}
	c := ClockData{Version: d.u32(), ClockID: d.u32(), WallNS: d.u64(), ClockNS: d.u64()}
	if d.short {
		return ClockData{}, fmt.Errorf("feature CLOCK_DATA: %d bytes, want 24", len(d.b))
	}
	return c, nil
}

// SetClockData sets the CLOCK_DATA feature (version 1).
func (fs *Features) SetClockData(c ClockData) {
	if c.Version == 0 {
		c.Version = 1
	}
	b := le.AppendUint32(nil, c.Version)
	b = le.AppendUint32(b, c.ClockID)
	b = le.AppendUint64(b, c.WallNS)
	fs.SetRaw(FeatClockData, le.AppendUint64(b, c.ClockNS))
}

// BuildID is an entry of the BUILD_ID feature (struct perf_record_header_build_id).
type BuildID struct {
	Misc     uint16 // cpumode bits, and MiscBuildIDSize when the size is given
	PID      int32  // -1 for the kernel and host images perf records
	ID       []byte
	Filename string
}

// buildIDEventSize is the fixed part: header, pid, 24-byte build-id area.
const buildIDEventSize = 8 + 4 + 24

// BuildIDs returns the BUILD_ID feature.
func (fs *Features) BuildIDs() ([]BuildID, error) {
	d, err := fs.section(FeatBuildID)
	if err != nil {
		return nil, err
	}
	var l []BuildID
	for d.off < len(d.b) {
		start := d.off
		d.u32()
		misc := d.u16()
		size := int(d.u16())
		if d.short || size < buildIDEventSize || size > len(d.b)-start {
			return l, fmt.Errorf("feature BUILD_ID: entry at offset %d has size %d, %d bytes left", start, size, len(d.b)-start)
		}
		e := dec{b: d.b[start+8 : start+size], swap: d.swap}
		var b BuildID
		b, err = decodeBuildID(&e, misc)
		if err != nil {
			return l, fmt.Errorf("feature BUILD_ID: entry at offset %d: %w", start, err)
		}
		l = append(l, b)
		d.off = start + size
	}
	return l, nil
}

func decodeBuildID(d *dec, misc uint16) (BuildID, error) {
	b := BuildID{Misc: misc, PID: int32(d.u32())}
	id := d.bytes(24)
	if d.short {
		return b, errShort
	}
	n := 20
	if misc&MiscBuildIDSize != 0 {
		n = int(id[20])
		if n > 20 {
			return b, fmt.Errorf("build-id size %d exceeds 20", n)
		}
	}
	b.ID = append([]byte(nil), id[:n]...)
	b.Filename = d.cstring()
	return b, nil
}

func appendBuildID(dst []byte, b *BuildID) []byte {
	name := pad8Name(len(b.Filename) + 1)
	size := buildIDEventSize + name
	misc := b.Misc
	if len(b.ID) != 20 {
		misc |= MiscBuildIDSize
	}
	dst = le.AppendUint32(dst, uint32(RecordHeaderBuildID))
	dst = le.AppendUint16(dst, misc)
	dst = le.AppendUint16(dst, uint16(size))
	dst = le.AppendUint32(dst, uint32(b.PID))
	var id [24]byte
	copy(id[:20], b.ID)
	if misc&MiscBuildIDSize != 0 {
		id[20] = byte(len(b.ID))
	}
	dst = append(dst, id[:]...)
	dst = append(dst, b.Filename...)
	return append(dst, make([]byte, name-len(b.Filename))...)
}

// pad8Name is perf's NAME_ALIGN of 64 bytes for build-id file names.
func pad8Name(n int) int { return (n + 63) &^ 63 }

// SetBuildIDs sets the BUILD_ID feature.
func (fs *Features) SetBuildIDs(l []BuildID) {
	var b []byte
	for i := range l {
		b = appendBuildID(b, &l[i])
	}
	if b == nil {
		b = []byte{}
	}
	fs.SetRaw(FeatBuildID, b)
}

// EventDesc is an entry of the EVENT_DESC feature.
type EventDesc struct {
	Attr Attr
	Name string
	IDs  []uint64
}

// EventDescs returns the EVENT_DESC feature: each event's attr, name and ids.
func (fs *Features) EventDescs() ([]EventDesc, error) {
	d, err := fs.section(FeatEventDesc)
	if err != nil {
		return nil, err
	}
	n, size := d.u32(), d.u32()
	if d.short || size < AttrSizeVer0 || size > attrSizeMax || uint64(n) > uint64(len(d.b))/uint64(size) {
		return nil, fmt.Errorf("feature EVENT_DESC: %d events of attr size %d in %d bytes", n, size, len(d.b))
	}
	l := make([]EventDesc, 0, n)
	for i := uint32(0); i < n; i++ {
		ab := d.bytes(uint64(size))
		if d.short {
			return nil, fmt.Errorf("feature EVENT_DESC: event %d: attr runs past the section", i)
		}
		a, err := decodeAttr(ab, d.swap)
		if err != nil {
			return nil, fmt.Errorf("feature EVENT_DESC: event %d: %w", i, err)
		}
		nids := d.u32()
		name, err := readPerfString(&d)
		if err != nil {
			return nil, fmt.Errorf("feature EVENT_DESC: event %d: %w", i, err)
		}
		if uint64(nids) > uint64(len(d.b)-d.off)/8 {
			return nil, fmt.Errorf("feature EVENT_DESC: event %d: %d ids run past the section", i, nids)
		}
		ids := d.u64s(nil, uint64(nids))
		l = append(l, EventDesc{Attr: a, Name: name, IDs: ids})
	}
	return l, nil
}

// SetEventDescs sets the EVENT_DESC feature.
func (fs *Features) SetEventDescs(l []EventDesc) {
	size := AttrSizeVer8
	for i := range l {
		if s := l[i].Attr.encodedSize(); s > size {
			size = s
		}
	}
	b := le.AppendUint32(nil, uint32(len(l)))
	b = le.AppendUint32(b, uint32(size))
	for i := range l {
		a := l[i].Attr
		a.Size = uint32(size)
		b = appendAttr(b, &a)
		b = le.AppendUint32(b, uint32(len(l[i].IDs)))
		b = appendPerfString(b, l[i].Name)
		for _, id := range l[i].IDs {
			b = le.AppendUint64(b, id)
		}
	}
	fs.SetRaw(FeatEventDesc, b)
}

// CPUTopology is the CPU_TOPOLOGY feature. Later parts are absent in files
// from older perf versions.
type CPUTopology struct {
	CoreSiblings   []string
	ThreadSiblings []string
	CoreID         []uint32 // per CPU, when present
	SocketID       []uint32
	DieSiblings    []string
	DieID          []uint32
}

// CPUTopology returns the CPU_TOPOLOGY feature. The number of CPUs comes
// from NRCPUS, as in perf.
func (fs *Features) CPUTopology() (*CPUTopology, error) {
	d, err := fs.section(FeatCPUTopology)
	if err != nil {
		return nil, err
	}
	var t CPUTopology
	if t.CoreSiblings, err = readStringList(&d, FeatCPUTopology); err != nil {
		return nil, err
	}
	if t.ThreadSiblings, err = readStringList(&d, FeatCPUTopology); err != nil {
		return nil, err
	}
	if d.off == len(d.b) {
		return &t, nil
	}
	avail, _, err := fs.NrCPUs()
	if err != nil {
		return nil, fmt.Errorf("feature CPU_TOPOLOGY: needs NRCPUS: %w", err)
	}
	if uint64(avail) > uint64(len(d.b)-d.off)/8 {
		return nil, fmt.Errorf("feature CPU_TOPOLOGY: %d CPUs run past the section", avail)
	}
	for i := uint32(0); i < avail; i++ {
		t.CoreID = append(t.CoreID, d.u32())
		t.SocketID = append(t.SocketID, d.u32())
	}
	if d.off == len(d.b) {
		return &t, nil
	}
	if t.DieSiblings, err = readStringList(&d, FeatCPUTopology); err != nil {
		return nil, err
	}
	if uint64(avail) > uint64(len(d.b)-d.off)/4 {
		return nil, fmt.Errorf("feature CPU_TOPOLOGY: %d die ids run past the section", avail)
	}
	for i := uint32(0); i < avail; i++ {
		t.DieID = append(t.DieID, d.u32())
	}
	return &t, nil
}

// SetCPUTopology sets the CPU_TOPOLOGY feature; CoreID and SocketID must
// have one entry per available CPU (NRCPUS), as must DieID if set.
func (fs *Features) SetCPUTopology(t *CPUTopology) {
	b := appendStringList(nil, t.CoreSiblings)
	b = appendStringList(b, t.ThreadSiblings)
	if len(t.CoreID) > 0 {
		for i := range t.CoreID {
			b = le.AppendUint32(b, t.CoreID[i])
			b = le.AppendUint32(b, t.SocketID[i])
		}
		if len(t.DieID) > 0 {
			b = appendStringList(b, t.DieSiblings)
			for _, id := range t.DieID {
				b = le.AppendUint32(b, id)
			}
		}
	}
	fs.SetRaw(FeatCPUTopology, b)
}
