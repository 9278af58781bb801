package perfdata

import "fmt"

// RecordType is perf_event_header.type.
type RecordType uint32

// Kernel record types (enum perf_event_type).
const (
	RecordMmap          RecordType = 1
	RecordLost          RecordType = 2
	RecordComm          RecordType = 3
	RecordExit          RecordType = 4
	RecordThrottle      RecordType = 5
	RecordUnthrottle    RecordType = 6
	RecordFork          RecordType = 7
	RecordRead          RecordType = 8
	RecordSample        RecordType = 9
	RecordMmap2         RecordType = 10
	RecordAux           RecordType = 11
	RecordItraceStart   RecordType = 12
	RecordLostSamples   RecordType = 13
	RecordSwitch        RecordType = 14
	RecordSwitchCPUWide RecordType = 15
	RecordNamespaces    RecordType = 16
	RecordKsymbol       RecordType = 17
	RecordBPFEvent      RecordType = 18
	RecordCgroup        RecordType = 19
	RecordTextPoke      RecordType = 20
	RecordAuxOutputHWID RecordType = 21
)

// perf's user-space record types (enum perf_user_event_type).
const (
	RecordHeaderAttr      RecordType = 64
	RecordHeaderEventType RecordType = 65
	RecordTracingData     RecordType = 66
	RecordHeaderBuildID   RecordType = 67
	RecordFinishedRound   RecordType = 68
	RecordIDIndex         RecordType = 69
	RecordAuxtraceInfo    RecordType = 70
	RecordAuxtrace        RecordType = 71
	RecordAuxtraceError   RecordType = 72
	RecordThreadMap       RecordType = 73
	RecordCPUMap          RecordType = 74
	RecordStatConfig      RecordType = 75
	RecordStat            RecordType = 76
	RecordStatRound       RecordType = 77
	RecordEventUpdate     RecordType = 78
	RecordTimeConv        RecordType = 79
	RecordHeaderFeature   RecordType = 80
	RecordCompressed      RecordType = 81
	RecordFinishedInit    RecordType = 82
)

var recordNames = map[RecordType]string{
	RecordMmap: "MMAP", RecordLost: "LOST", RecordComm: "COMM", RecordExit: "EXIT",
	RecordThrottle: "THROTTLE", RecordUnthrottle: "UNTHROTTLE", RecordFork: "FORK",
	RecordRead: "READ", RecordSample: "SAMPLE", RecordMmap2: "MMAP2", RecordAux: "AUX",
	RecordItraceStart: "ITRACE_START", RecordLostSamples: "LOST_SAMPLES",
	RecordSwitch: "SWITCH", RecordSwitchCPUWide: "SWITCH_CPU_WIDE",
	RecordNamespaces: "NAMESPACES", RecordKsymbol: "KSYMBOL", RecordBPFEvent: "BPF_EVENT",
	RecordCgroup: "CGROUP", RecordTextPoke: "TEXT_POKE", RecordAuxOutputHWID: "AUX_OUTPUT_HW_ID",
	RecordHeaderAttr: "ATTR", RecordHeaderEventType: "EVENT_TYPE",
	RecordTracingData: "TRACING_DATA", RecordHeaderBuildID: "BUILD_ID",
	RecordFinishedRound: "FINISHED_ROUND", RecordIDIndex: "ID_INDEX",
	RecordAuxtraceInfo: "AUXTRACE_INFO", RecordAuxtrace: "AUXTRACE",
	RecordAuxtraceError: "AUXTRACE_ERROR", RecordThreadMap: "THREAD_MAP",
	RecordCPUMap: "CPU_MAP", RecordStatConfig: "STAT_CONFIG", RecordStat: "STAT",
	RecordStatRound: "STAT_ROUND", RecordEventUpdate: "EVENT_UPDATE",
	RecordTimeConv: "TIME_CONV", RecordHeaderFeature: "FEATURE",
	RecordCompressed: "COMPRESSED", RecordFinishedInit: "FINISHED_INIT",
}

// String returns perf's name for the record type, as perf report --stats
// prints it, or "UNKNOWN(n)".
func (t RecordType) String() string {
	if s, ok := recordNames[t]; ok {
		return s
	}
	return fmt.Sprintf("UNKNOWN(%d)", uint32(t))
}

// IsUser reports whether t is one of perf's user-space (synthesized)
// record types, which never carry a sample_id trailer.
func (t RecordType) IsUser() bool { return t >= 64 }

// Misc bits of perf_event_header.misc.
const (
	MiscCPUModeMask      = 0x7
	MiscCPUModeUnknown   = 0
	MiscKernel           = 1
	MiscUser             = 2
	MiscHypervisor       = 3
	MiscGuestKernel      = 4
	MiscGuestUser        = 5
	MiscProcMapTimeout   = 1 << 12
	MiscMmapData         = 1 << 13 // MMAP, MMAP2
	MiscCommExec         = 1 << 13 // COMM
	MiscForkExec         = 1 << 13 // FORK
	MiscSwitchOut        = 1 << 13 // SWITCH, SWITCH_CPU_WIDE
	MiscExactIP          = 1 << 14 // SAMPLE
	MiscSwitchOutPreempt = 1 << 14
	MiscMmapBuildID      = 1 << 14 // MMAP2 carries a build-id, not an inode
	MiscBuildIDSize      = 1 << 15 // HEADER_BUILD_ID carries its size
)

// SampleFormat is perf_event_attr.sample_type.
type SampleFormat uint64

// Bits of SampleFormat (enum perf_event_sample_format).
const (
	SampleIP           SampleFormat = 1 << 0
	SampleTID          SampleFormat = 1 << 1
	SampleTime         SampleFormat = 1 << 2
	SampleAddr         SampleFormat = 1 << 3
	SampleRead         SampleFormat = 1 << 4
	SampleCallchain    SampleFormat = 1 << 5
	SampleID           SampleFormat = 1 << 6
	SampleCPU          SampleFormat = 1 << 7
	SamplePeriod       SampleFormat = 1 << 8
	SampleStreamID     SampleFormat = 1 << 9
	SampleRaw          SampleFormat = 1 << 10
	SampleBranchStack  SampleFormat = 1 << 11
	SampleRegsUser     SampleFormat = 1 << 12
	SampleStackUser    SampleFormat = 1 << 13
	SampleWeight       SampleFormat = 1 << 14
	SampleDataSrc      SampleFormat = 1 << 15
	SampleIdentifier   SampleFormat = 1 << 16
	SampleTransaction  SampleFormat = 1 << 17
	SampleRegsIntr     SampleFormat = 1 << 18
	SamplePhysAddr     SampleFormat = 1 << 19
	SampleAux          SampleFormat = 1 << 20
	SampleCgroup       SampleFormat = 1 << 21
	SampleDataPageSize SampleFormat = 1 << 22
	SampleCodePageSize SampleFormat = 1 << 23
	SampleWeightStruct SampleFormat = 1 << 24
)

var sampleFormatNames = []string{
	"IP", "TID", "TIME", "ADDR", "READ", "CALLCHAIN", "ID", "CPU", "PERIOD",
	"STREAM_ID", "RAW", "BRANCH_STACK", "REGS_USER", "STACK_USER", "WEIGHT",
	"DATA_SRC", "IDENTIFIER", "TRANSACTION", "REGS_INTR", "PHYS_ADDR", "AUX",
	"CGROUP", "DATA_PAGE_SIZE", "CODE_PAGE_SIZE", "WEIGHT_STRUCT",
}

// String lists the set bits the way perf report --header-only does.
func (f SampleFormat) String() string { return bitNames(uint64(f), sampleFormatNames) }

// ReadFormat is perf_event_attr.read_format.
type ReadFormat uint64

// Bits of ReadFormat.
const (
	ReadTotalTimeEnabled ReadFormat = 1 << 0
	ReadTotalTimeRunning ReadFormat = 1 << 1
	ReadID               ReadFormat = 1 << 2
	ReadGroup            ReadFormat = 1 << 3
	ReadLost             ReadFormat = 1 << 4
)

var readFormatNames = []string{"TOTAL_TIME_ENABLED", "TOTAL_TIME_RUNNING", "ID", "GROUP", "LOST"}

func (f ReadFormat) String() string { return bitNames(uint64(f), readFormatNames) }

// BranchSampleHWIndex is the branch_sample_type bit that adds hw_idx to
// the branch stack of a sample.
const BranchSampleHWIndex = 1 << 17

func bitNames(v uint64, names []string) string {
	s := ""
	for i := 0; i < 64 && v != 0; i++ {
		if v&(1<<i) == 0 {
			continue
		}
		v &^= 1 << i
		if s != "" {
			s += "|"
		}
		if i < len(names) {
			s += names[i]
		} else {
			s += fmt.Sprintf("bit%d", i)
		}
	}
	return s
}
