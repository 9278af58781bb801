package profile

import (
	"cmp"
	"slices"
)

// ImageKind says what an image is.
type ImageKind uint8

const (
	// ImageFile is an ELF file mapped from disk (an executable, a library).
	ImageFile ImageKind = iota
	// ImageKernel is the kernel or one of its modules.
	ImageKernel
	// ImageAnon is anonymous executable memory of one process: JIT code,
	// as OProfile's "anon (tgid:N range:0xS-0xE)" bucket.
	ImageAnon
	// ImageUnknown holds addresses that were in no known mapping.
	ImageUnknown
)

// Image is a binary image or an anonymous code region samples fell in.
type Image struct {
	Name    string // path, "[kernel.kallsyms]", "[module]", "[vdso]", "anon (tgid:N range:0xS-0xE)", "[unknown]"
	BuildID string // hex, "" when unknown
	Kind    ImageKind
	// Start, Limit and Offset are the address range and file offset of the
	// first mapping of the image met (for pprof's mappings).
	Start, Limit, Offset uint64
	// NoSymbols says why the image could not be symbolized, or "".
	NoSymbols string
	// Stripped says, for an image with only its exported symbols whose
	// other functions had samples, what would name them; or "".
	Stripped string
	// Handler is the anon handler that named the JIT code of an
	// ImageAnon image ("jitlog", "perfmap", ...); "" for other images
	// and for anonymous memory no handler named.
	Handler string
}

// Func is a function of an image. A sample in an image without a symbol
// at its address gets a Func per address, named by the address, as perf
// reports it.
type Func struct {
	Name   string
	Image  int32  // index in Profile.Images
	Addr   uint64 // start address of the symbol, or the unresolved address
	File   string // source file of the function's first line, when known
	Kernel bool
	// Unresolved: no symbol covers Addr, and Name is the address, as
	// perf's reports print it.
	Unresolved bool
	// Code is the machine code of JIT-generated functions whose JIT
	// logged it, for annotate; nil otherwise (file images have theirs).
	Code []byte
	// Size is the length of JIT code in bytes, as its JIT data says; 0
	// for other functions.
	Size uint64
	// Gen is JIT code's generation (jitlog's sequence number, jitdump's
	// code index; its name ends in " [gen Gen]"), 0 when its JIT data
	// has none.
	Gen uint64
	// Load and Unload are when JIT code was there, in the recording's
	// clock (CLOCK_MONOTONIC nanoseconds, as StartNS): 0 when its JIT
	// data has no times, Unload also while it still was at the end.
	Load, Unload uint64
}

// Frame is a function, and when lines were asked for, a source line in it.
type Frame struct {
	Func int32  // index in Profile.Funcs
	File int32  // source file, index in Profile.Strings; 0 ("") when unknown or not asked for
	Line int32  // 0 when unknown or not asked for
	Addr uint64 // image-relative address, when addresses were asked for
}

// Node is a node of the call-stack trie: a frame called from Parent.
type Node struct {
	Parent int32 // -1 for the root's children
	Frame  int32 // index in Profile.Frames
}

// Thread identifies the thread a sample was taken in.
type Thread struct {
	PID, TID uint32
	Comm     int32 // index in Profile.Strings
}

// Key identifies one aggregated entry.
type Key struct {
	Stack  int32 // leaf node in Profile.Nodes; -1 for an empty stack
	Thread int32 // index in Profile.Threads
	CPU    int32 // -1 when the recording has no CPU
	Event  int32 // index in Profile.Events
}

// Value is what the samples of one entry add up to.
type Value struct {
	Count  uint64 // samples
	Period uint64 // sum of their periods: the event count they stand for
}

// Entry is one aggregated entry.
type Entry struct {
	Key
	Value
	// Times, when the source was asked for them (Builder.KeepTimes),
	// are the times of the entry's samples, in the recording's clock
	// and in the order they were added; nil otherwise. On the entry
	// rather than in a map by key, they go where it goes (a filter
	// that keeps it, a sort), and the daemon's push, which hands over
	// thousands of entries every 10 s, neither builds nor looks up a
	// map of them.
	Times []uint64
}

// Event describes one sampled event.
type Event struct {
	Name   string `json:"name"`
	Period uint64 `json:"period,omitempty"` // fixed sample period, 0 in frequency mode
	Freq   uint64 `json:"freq,omitempty"`   // sampling frequency, 0 with a fixed period
	Count  uint64 `json:"samples"`          // samples
	Total  uint64 `json:"total"`            // sum of periods
}

// Profile is an aggregated profile.
type Profile struct {
	Events  []Event
	Images  []Image
	Funcs   []Func
	Frames  []Frame
	Nodes   []Node
	Threads []Thread
	Strings []string
	Entries []Entry
	// Arcs, not nil even when empty, say the source kept caller-callee
	// arcs instead of stacks (a sample database's {cg} files); the
	// entries are then flat.
	Arcs []Arc

	// About the recording.
	Cmdline          []string
	Hostname         string
	StartNS, EndNS   uint64 // times of the first and last sample
	Lost             uint64 // samples lost (LOST and LOST_SAMPLES records)
	SamplesNoMapping uint64 // samples whose address was in no mapping
	// Unwound counts the call chains unwound from user stacks (DWARF
	// call graphs), and how many of them stopped in JIT code.
	Unwound UnwindStats
	// WallNS and ClockNS tie the recording's clock to wall time: the
	// clock read ClockNS when the wall clock read WallNS (nanoseconds
	// since the Unix epoch), as perf's CLOCK_DATA says. Both 0 when the
	// source does not say.
	WallNS, ClockNS uint64
	// Processes are what the source knew of the processes of the
	// samples, by pid; those it knew nothing of are left out.
	Processes []Process
}

// UnwindStats counts the call chains a source unwound from user stacks.
type UnwindStats struct {
	Chains uint64
	// JITStops are the chains that stopped in JIT code with neither
	// unwinding information nor a plausible frame pointer: their callers
	// are missing.
	JITStops uint64
}

// Process is what a source knew of one process.
type Process struct {
	PID uint32
	// Exe is the path of the executable it ran last, as its mappings
	// name it; "" when unknown. BuildID is that file's, hex.
	Exe, BuildID string
}

// WallTime converts a time in the recording's clock to nanoseconds
// since the Unix epoch, and reports whether the profile says how.
func (p *Profile) WallTime(t uint64) (uint64, bool) {
	if p.WallNS == 0 {
		return 0, false
	}
	return p.WallNS + t - p.ClockNS, true // modular: t may be before ClockNS
}

// Stack appends the frames of the stack ending at node to dst, leaf first.
func (p *Profile) Stack(dst []int32, node int32) []int32 {
	for node >= 0 {
		dst = append(dst, p.Nodes[node].Frame)
		node = p.Nodes[node].Parent
	}
	return dst
}

// FuncOf returns the function of a frame.
func (p *Profile) FuncOf(frame int32) *Func { return &p.Funcs[p.Frames[frame].Func] }

// SortEntries orders the entries by key, so outputs are deterministic.
func (p *Profile) SortEntries() {
	// Each comparison only when the ones before are equal: cmp.Or
	// makes all four, and a push sorts some 10,000 entries every 10 s.
	slices.SortFunc(p.Entries, func(x, y Entry) int {
		a, b := &x.Key, &y.Key
		if a.Event != b.Event {
			return cmp.Compare(a.Event, b.Event)
		}
		if a.Stack != b.Stack {
			return cmp.Compare(a.Stack, b.Stack)
		}
		if a.Thread != b.Thread {
			return cmp.Compare(a.Thread, b.Thread)
		}
		return cmp.Compare(a.CPU, b.CPU)
	})
}
