package resolve

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/symbolize"
)

// Mode is where a sampled address is: the kernel's cpumode
// (PERF_RECORD_MISC_* of include/uapi/linux/perf_event.h).
type Mode uint8

// The modes.
const (
	ModeUnknown     Mode = 0
	ModeKernel      Mode = 1
	ModeUser        Mode = 2
	ModeHypervisor  Mode = 3
	ModeGuestKernel Mode = 4
	ModeGuestUser   Mode = 5
)

// Callchain context markers (enum perf_callchain_context): an entry of
// a callchain at or above ContextMax is not an address but says whose
// frames follow.
const (
	ContextHV          = ^uint64(32 - 1)   // -32
	ContextKernel      = ^uint64(128 - 1)  // -128
	ContextUser        = ^uint64(512 - 1)  // -512
	ContextGuest       = ^uint64(2048 - 1) // -2048
	ContextGuestKernel = ^uint64(2176 - 1) // -2176
	ContextGuestUser   = ^uint64(2560 - 1) // -2560
	ContextMax         = ^uint64(4095 - 1) // -4095
)

// Sample is one sample, or several taken at one place, to resolve.
type Sample struct {
	PID, TID uint32
	Time     uint64 // in the clock of the mappings' times
	CPU      int32  // -1 when unknown
	Mode     Mode
	IP       uint64
	// Callchain is the stack as the kernel writes it: return addresses,
	// callee first, with context markers (ContextKernel, ContextUser,
	// ...) saying whose frames follow; nil for none.
	Callchain []uint64
	// BySeq says the code at IP, when it is JIT code, is the generation
	// Seq of the code at that address (seed 000's sequence number, kept
	// by a sample file instead of a time) and is named by it.
	BySeq bool
	Seq   uint64
	Event int32 // index in the profile's events
	// Count and Period are what the samples add up to.
	Count, Period uint64
	// Mapping, when set, is the mapping of a file that held IP at
	// Time, as the caller found it (a live source, which looked it up
	// as it took the sample): a sample in user mode is named by its
	// file offset there, without asking Processes again.
	Mapping *process.Mapping
}

// Processes is what the Resolver asks of processes and their mappings:
// a *process.Tracker, or anything that can answer as one.
type Processes interface {
	// Lookup returns the executable mapping that held addr in process
	// pid at time (the kernel's when kernel), or nil.
	Lookup(pid uint32, addr, time uint64, kernel bool) *process.Mapping
	// Thread says what holds of thread tid of pid around time: its
	// name, the epoch of pid's address space, and the span in which
	// both hold.
	Thread(pid, tid uint32, time uint64) process.Span
	// Version changes when earlier answers may no longer hold; the
	// Resolver then drops what it cached (of the processes whose Stamp
	// changed, with Stamped).
	Version() uint64
}

// Stamped is Processes that say of which processes answers changed: a
// live Tracker's, told of processes coming and going all the time, so
// that what was cached of the others holds on.
type Stamped interface {
	// Stamp changes whenever answers about pid may change, and never
	// comes back to a value it had.
	Stamp(pid uint32) uint64
}

// AllProcesses is the pid of a mapping that stands for the anonymous
// memory of all an application's processes (a session counts the
// anonymous memory that no JIT data names so, per application).
const AllProcesses = 1<<32 - 1

// AnonResolver names code in anonymous executable memory: what a JIT
// had generated at addr in process pid at time. It returns false for
// addresses it does not know, which then fall in the mapping's anon
// bucket. It may be called from several goroutines at once.
type AnonResolver interface {
	Resolve(pid uint32, addr, time uint64) (AnonFrame, bool)
}

// SeqResolver names JIT code by its generation (Sample.BySeq) rather
// than by time; an AnonResolver that can implements it.
type SeqResolver interface {
	ResolveSeq(pid uint32, addr, seq uint64) (AnonFrame, bool)
}

// AnonFrame is what an AnonResolver knows about an address.
type AnonFrame struct {
	Func    string // the JIT's name for the code
	Image   string // the image to report it under, e.g. "[JIT jitlog] node"
	Handler string // the anon handler that named it
	Start   uint64 // start address of the code
	File    string
	Line    int
	Code    []byte // its machine code, when the JIT logged it
	Size    uint64 // the code's length in bytes
	// Gen is the code's generation (jitlog's sequence number, jitdump's
	// code index), 0 when the data has none: what a collector keeps
	// instead of the time, to name the code later by ResolveSeq.
	Gen uint64
	// Load and Unload are when the code was there (the recording's
	// clock): 0 when the JIT data has no times, Unload also while the
	// code still is.
	Load, Unload uint64
	// Held says the AnonResolver gives this answer at every time in
	// [Load, Unload) (Unload 0: from Load on; both 0: at every time), as
	// the built-in handlers' data does: AddTimes then resolves a place
	// once for its samples in that span.
	Held bool
}

// Options control a Resolver.
type Options struct {
	// Symbolizer finds the images; it must be set.
	Symbolizer *symbolize.Symbolizer
	// Anon names JIT code; nil leaves it in OProfile's anon buckets.
	Anon AnonResolver
	// Lines resolves a source line for every frame (DWARF).
	Lines bool
	// Addresses keeps each frame's image-relative address (annotate).
	Addresses bool
	// LeafOnly keeps only the sampled address of each stack, for flat
	// profiles: callchains are not resolved.
	LeafOnly bool
	// SparseMappings caches each sampled mapping's image in a map
	// rather than in a slice as long as the largest mapping ID: a live
	// view's Tracker is told of every mapping the machine makes, for
	// days, and few of them are sampled.
	SparseMappings bool
	// Live, when set, says where a process that still runs sees its own
	// files: an image the host's path does not give (missing, or another
	// build-id), as for a process in a mount namespace of its own, is
	// read there (symbolize.Symbolizer.OpenIn), as perf reads it through
	// /proc/PID/root.
	Live func(pid uint32) (symbolize.Place, bool)
}

// Resolver turns samples into the frames, stacks and threads of a
// profile, symbolizing with internal/symbolize and naming JIT code with
// an AnonResolver. A Resolver is used by one goroutine; several may
// share the Symbolizer, the AnonResolver and a settled Tracker, each
// with a Builder of its own.
type Resolver struct {
	procs   Processes
	stamps  Stamped // procs, when it says which processes changed
	version uint64
	opts    Options
	b       *profile.Builder
	cache   map[cacheKey]int32
	images  map[imageKey]*loadedImage
	inProc  map[procImageKey]*loadedImage // read in a live process's root (Options.Live)
	mapped  []*loadedImage                // by Mapping.ID
	sparse  map[int32]*loadedImage        // by Mapping.ID, with Options.SparseMappings
	ksyms   map[uint64]int32              // frames of the kernel symbols met, by start
	// kspans are the spans of kernel addresses that resolve to one
	// frame, each its symbol's (symbolize.Kernel.LookupSpan), in
	// order: a kernel's samples fall on a new address nearly every
	// time, and a daemon looked each up in the kernel's table, a binary
	// search through 120,000 entries, and kept it in two maps by
	// address (a tenth of the push's resolving, at 1 kHz).
	kspans []span
	// kernelLeaves are the stacks of LeafOnly samples in the kernel, by
	// frame, for every process: a process's own cache of leaves
	// (pidCache.leaves) made each new process resolve them again.
	kernelLeaves map[int32]int32
	// byOffset are the frames of the file offsets of images met, of
	// every process, and with LeafOnly their stacks: a program's
	// processes share its images, and each new one would otherwise look
	// each of its places up again.
	byOffset map[offsetKey]offsetEntry
	// lastMapped is the image of the last Sample.Mapping met.
	lastMapped *process.Mapping
	lastImage  *loadedImage

	kernel       *symbolize.Kernel
	kernelErr    error
	kernelLoaded bool

	frames []int32
	// pids is what was cached of each process at its Stamp; last is the
	// one of lastPID.
	pids    map[uint32]*pidCache
	lastPID uint32
	last    *pidCache

	arena [][]uint64 // key words of the chains, in blocks
	key   []uint64   // the current sample's key words
	// timed says the current stack depends on more than the epoch: on
	// JIT code named by time. Its JIT frames' answers hold in [validFrom,
	// validTo) of sample time (AnonFrame's Load and Unload), unless
	// exact: an address no JIT data named (it may be named at another
	// time), or code named by sequence number, hold at their time alone.
	timed, exact       bool
	validFrom, validTo uint64
}

// pidCache is what a Resolver caches of one process, valid while its
// Stamp is stamp (checked at version).
type pidCache struct {
	stamp, version uint64
	threads        map[uint32]threadState // by tid
	chains         map[uint64]chainEntry  // by hash of the key words
	leaves         map[leafKey]int32      // the stacks of LeafOnly
}

// maxPIDCaches and maxArenaBlocks bound what a Resolver caches of
// processes that are gone: past them, it drops all of it.
const (
	maxPIDCaches   = 1 << 14
	maxArenaBlocks = 64 // 32 MiB of chains' words
)

// New returns a Resolver of samples of procs into b.
func New(b *profile.Builder, procs Processes, opts Options) *Resolver {
	r := &Resolver{
		procs: procs, opts: opts, b: b,
		cache:  map[cacheKey]int32{},
		images: map[imageKey]*loadedImage{},
		inProc: map[procImageKey]*loadedImage{},
		ksyms:  map[uint64]int32{},

		kernelLeaves: map[int32]int32{},

		byOffset: map[offsetKey]offsetEntry{},
	}
	r.stamps, _ = procs.(Stamped)
	if opts.SparseMappings {
		r.sparse = map[int32]*loadedImage{}
	}
	r.reset()
	return r
}

// reset drops what depends on the answers of procs at one version.
func (r *Resolver) reset() {
	r.version = r.procs.Version()
	r.pids = map[uint32]*pidCache{}
	r.lastPID, r.last = 0, nil
	if len(r.arena) > 0 {
		r.arena = append(r.arena[:0], r.arena[0][:0])
	}
}

// changed follows procs to a new version: with Stamped, each process's
// cache is checked against its Stamp when next asked for (proc); else,
// or past the bounds of what is kept, all is dropped.
func (r *Resolver) changed() {
	if r.stamps == nil || len(r.pids) > maxPIDCaches || len(r.arena) > maxArenaBlocks {
		r.reset()
		return
	}
	r.version = r.procs.Version()
	r.last = nil
}

// Forget drops what the Resolver cached of process pid, which exited: a
// live source's Resolver (the daemon's push), told of processes for
// weeks, keeps the caches of those that live. The words of its chains
// stay in the arena until the next reset.
func (r *Resolver) Forget(pid uint32) {
	delete(r.pids, pid)
	if r.lastPID == pid {
		r.last = nil
	}
}

// proc returns what is cached of process pid, dropped first when its
// Stamp changed.
func (r *Resolver) proc(pid uint32) *pidCache {
	if r.last != nil && r.lastPID == pid {
		return r.last
	}
	pc := r.pids[pid]
	if pc == nil {
		pc = &pidCache{threads: map[uint32]threadState{}, chains: map[uint64]chainEntry{}, leaves: map[leafKey]int32{}, version: r.version}
		if r.stamps != nil {
			pc.stamp = r.stamps.Stamp(pid)
		}
		r.pids[pid] = pc
	} else if r.stamps != nil && pc.version != r.version {
		pc.version = r.version
		if st := r.stamps.Stamp(pid); st != pc.stamp {
			pc.stamp = st
			clear(pc.threads)
			clear(pc.chains) // their words stay in the arena until a reset
			clear(pc.leaves)
		}
	}
	r.lastPID, r.last = pid, pc
	return pc
}

// cacheKey has no padding, so maps hash it as two words (memhash128)
// rather than byte by byte.
type cacheKey struct {
	mapping int64 // mappingKey, or one of the cache* values
	addr    uint64
}

const (
	cacheUnknown int64 = -1
	cacheKernel  int64 = -2
)

// mappingKey is cacheKey.mapping for the anon bucket of mapping m.
func mappingKey(m *process.Mapping) int64 { return int64(m.ID) }

type imageKey struct{ path, buildID string }

type procImageKey struct {
	pid uint32
	imageKey
}

type loadedImage struct {
	im    *symbolize.Image
	err   error
	noted bool  // Stripped said in the profile
	id    int32 // in the profile; -1 until a sample falls in the image
	// syms are the frames of the image's symbols met, by symbol start:
	// interning a frame hashes its names, a symbol lookup does not.
	syms map[uint64]int32
	// leaves are the file offsets of the functions met, each with its
	// stack as a leaf (spans, fileLeaf).
	leaves []span
}

type threadState struct {
	from, to uint64 // the span of time in which the rest holds
	comm     string
	id       int32 // the interned thread
	epoch    uint64
}

// Add resolves s and adds it to the profile. The profile's fields about
// the recording (its span of time among them) are the source's to fill.
func (r *Resolver) Add(s *Sample) {
	if r.procs.Version() != r.version {
		r.changed()
	}
	th := r.thread(s.PID, s.TID, s.Time)
	node := r.stack(s, th.epoch)
	r.b.AddAt(profile.Key{Stack: node, Thread: th.id, CPU: s.CPU, Event: s.Event}, s.Count, s.Period, s.Time)
}

// AddTimes adds the samples of one place and thread taken at times, in
// order, resolving the place once for each span of time in which it
// resolves one way (Span: an exec, a new name; in JIT code named by time,
// the span in which the code named was there, AnonFrame's Load and
// Unload); s.Time and s.Count are ignored, s.Period is the sum of their
// periods, all of it added with the first span's. A source that keeps
// the samples of a place together (the daemon's push) thus resolves it
// once, and asks about its thread once a span. Code the AnonResolver
// did not name is resolved again for each time: data read later may
// name it.
func (r *Resolver) AddTimes(s *Sample, times []uint64) {
	if r.procs.Version() != r.version {
		r.changed()
	}
	period := s.Period
	for len(times) > 0 {
		th := r.thread(s.PID, s.TID, times[0])
		s.Time = times[0]
		node := r.stack(s, th.epoch)
		to := min(th.to, r.holdsUntil(times[0]))
		n := 1
		for n < len(times) && times[n] < to {
			n++
		}
		r.b.AddTimes(profile.Key{Stack: node, Thread: th.id, CPU: s.CPU, Event: s.Event}, period, times[:n])
		period, times = 0, times[n:]
	}
}

// holdsUntil is when the stack last resolved for a sample at tm
// may resolve another way: never, unless it has JIT code named by time;
// then the end of the span in which that code was there, or right
// after tm.
func (r *Resolver) holdsUntil(tm uint64) uint64 {
	switch {
	case !r.timed:
		return ^uint64(0)
	case r.exact || tm < r.validFrom || tm >= r.validTo:
		return tm + 1
	}
	return r.validTo
}

// Span returns what holds of thread tid of pid at time, as Add sees it,
// without adding the thread to the profile: a source that sums samples
// by place asks whether a place's samples straddle a change (Span.To).
func (r *Resolver) Span(pid, tid uint32, time uint64) process.Span {
	if r.procs.Version() != r.version {
		r.changed()
	}
	ts := r.span(pid, tid, time)
	return process.Span{Comm: ts.comm, Epoch: ts.epoch, From: ts.from, To: ts.to}
}

// thread returns what the processes say of a thread at tm, asking them
// once per span of time in which the answer holds, and the thread's id
// in the profile.
func (r *Resolver) thread(pid, tid uint32, tm uint64) threadState {
	ts := r.span(pid, tid, tm)
	// Interning the thread hashes its name: do it only when the name
	// changes.
	if ts.id < 0 {
		ts.id = r.b.Thread(profile.Thread{PID: pid, TID: tid, Comm: r.b.String(ts.comm)})
		r.proc(pid).threads[tid] = ts
	}
	return ts
}

// span is thread without interning the thread, whose id is -1 until
// thread interns it.
func (r *Resolver) span(pid, tid uint32, tm uint64) threadState {
	threads := r.proc(pid).threads
	ts, ok := threads[tid]
	if ok && ts.from <= tm && tm < ts.to {
		return ts
	}
	sp := r.procs.Thread(pid, tid, tm)
	if !ok || ts.comm != sp.Comm {
		ts.comm, ts.id = sp.Comm, -1
	}
	ts.epoch, ts.from, ts.to = sp.Epoch, sp.From, sp.To
	threads[tid] = ts
	return ts
}

// leafKey is the key words of a stack without its callchain, in its
// process's cache.
type leafKey struct{ mode, epoch, ip uint64 }

// chainEntry is a resolved callchain: where its key words are in
// Resolver.arena (block, offset, length) and its leaf node.
type chainEntry struct {
	block, off, n int32
	node          int32
}

// arenaBlock is the largest size in words of a block of Resolver.arena.
// Blocks, rather than one slice that grows, allocate each word once:
// append grows a big slice by a quarter, so one arena of n words
// allocated about 5n, all of it fresh memory, which a VM faults in at
// great cost (a tenth of a DWARF report's time). The first block is
// arenaFirst words and each next one twice the last, up to arenaBlock:
// a resolver of a few chains (a daemon's push, a small recording, a
// fuzz input, which loads one several times) would otherwise allocate
// and clear half a megabyte it never uses, most of such a run's time.
const (
	arenaFirst = 1 << 9
	arenaBlock = 1 << 16
)

// keep copies key into the arena and returns where it is.
func (r *Resolver) keep(key []uint64, node int32) chainEntry {
	n := len(r.arena)
	if n == 0 || len(r.arena[n-1])+len(key) > cap(r.arena[n-1]) {
		size := arenaFirst
		if n > 0 {
			size = min(2*cap(r.arena[n-1]), arenaBlock)
		}
		r.arena = append(r.arena, make([]uint64, 0, max(size, len(key))))
		n++
	}
	b := r.arena[n-1]
	e := chainEntry{int32(n - 1), int32(len(b)), int32(len(key)), node}
	r.arena[n-1] = append(b, key...)
	return e
}

// words returns the key words of e.
func (r *Resolver) words(e chainEntry) []uint64 {
	return r.arena[e.block][e.off : e.off+e.n]
}

// stack returns the leaf node of the sample's stack. A callchain resolves
// the same way in a process as long as its mappings do not change, so
// each is resolved once per epoch and then found by its hash. The key
// leaves the sampled address out: the leaf is resolved on its own (a
// lookup of its frame) and pushed under its callers' node, which the key
// finds. Samples in one function differ mostly in their leaves, so
// leaving them out finds the callers of most samples among those met,
// where a key with the leaf missed nearly half of a DWARF recording's
// samples, each resolving its whole chain again. JIT code named by
// sequence number is not cached: the number is not in the key.
func (r *Resolver) stack(s *Sample, epoch uint64) int32 {
	r.timed, r.exact, r.validFrom, r.validTo = false, false, 0, ^uint64(0)
	if s.BySeq {
		return r.resolve(s)
	}
	if r.opts.LeafOnly {
		if m := s.Mapping; m != nil && !m.Anon && s.Mode == ModeUser {
			// Its file's place, for every process and epoch.
			return r.fileLeaf(m, s.IP)
		}
		if s.Mode == ModeKernel || s.Mode == ModeHypervisor {
			// The kernel's addresses are every process's.
			leaf := r.frame(s.PID, s.IP, s.Time, s.Mode, false, s)
			node, ok := r.kernelLeaves[leaf]
			if !ok {
				node = r.b.Push(-1, leaf)
				r.kernelLeaves[leaf] = node
			}
			return node
		}
		// One lookup of a fixed-size key, without the hashing and
		// comparing a chain of any length needs.
		leaves := r.proc(s.PID).leaves
		k := leafKey{uint64(s.Mode), epoch, s.IP}
		if node, ok := leaves[k]; ok {
			return node
		}
		node := r.resolve(s)
		if !r.timed {
			leaves[k] = node
		}
		return node
	}
	// The leaf's frame first, as resolve interns it.
	leaf := r.frame(s.PID, s.IP, s.Time, s.Mode, false, s)
	key := append(r.key[:0], uint64(s.PID)<<32|uint64(s.Mode), epoch)
	if i := skipped(s); i >= 0 {
		key = append(append(key, s.Callchain[:i]...), s.Callchain[i+1:]...)
	} else {
		key = append(key, s.Callchain...)
	}
	r.key = key
	h := uint64(len(key))
	for _, w := range key {
		h = (h ^ w) * 0x9e3779b97f4a7c15
		h ^= h >> 29
	}
	chains := r.proc(s.PID).chains
	e, found := chains[h]
	if found && slices.Equal(r.words(e), key) {
		return r.b.Push(e.node, leaf)
	}
	// The callers are cached unless they are timed themselves; the
	// stack is timed when the leaf or they are.
	leafTimed := r.timed
	r.timed = false
	callers := r.callers(s)
	if !found && !r.timed {
		chains[h] = r.keep(key, callers)
	}
	r.timed = r.timed || leafTimed
	return r.b.Push(callers, leaf)
}

// skipped returns the index in s.Callchain of its first address when
// that is the sampled address, which the chain then repeats (as the
// kernel writes chains) and resolve leaves out; -1 otherwise.
func skipped(s *Sample) int {
	for i, ip := range s.Callchain {
		if ip < ContextMax {
			if ip == s.IP {
				return i
			}
			return -1
		}
	}
	return -1
}

// resolve interns the sample's stack and returns its leaf node.
func (r *Resolver) resolve(s *Sample) int32 {
	leaf := r.frame(s.PID, s.IP, s.Time, s.Mode, false, s)
	return r.b.Push(r.callers(s), leaf)
}

// callers interns the frames of the sample's callchain but its leaf,
// root first, and returns the node of the leaf's caller (-1 when it has
// none).
func (r *Resolver) callers(s *Sample) int32 {
	if r.opts.LeafOnly {
		return -1
	}
	pid := s.PID
	mode := s.Mode
	r.frames = r.frames[:0]
	skip := skipped(s)
	for i, ip := range s.Callchain {
		if ip >= ContextMax {
			switch ip {
			case ContextKernel:
				mode = ModeKernel
			case ContextUser:
				mode = ModeUser
			default:
				mode = ModeGuestKernel // never resolved
			}
			continue
		}
		if i == skip {
			continue
		}
		r.frames = append(r.frames, r.frame(pid, ip, s.Time, mode, true, nil))
	}
	node := int32(-1)
	for i := len(r.frames) - 1; i >= 0; i-- {
		node = r.b.Push(node, r.frames[i])
	}
	return node
}

// frame resolves one address to an interned frame; leaf is the sample
// when addr is its sampled address, whose JIT code it may name by
// sequence number.
func (r *Resolver) frame(pid uint32, addr, tm uint64, mode Mode, ret bool, leaf *Sample) int32 {
	switch mode {
	case ModeKernel, ModeHypervisor:
		// Cached for every process, by span or address: stack's cache
		// of leaves is a process's own.
		if id, ok := spanAt(r.kspans, addr); ok {
			return id
		}
		k := cacheKey{cacheKernel, addr}
		if id, ok := r.cache[k]; ok {
			return id
		}
		id, spanned := r.kernelFrame(addr)
		if !spanned {
			r.cache[k] = id
		}
		return id
	case ModeUser:
	default:
		return r.unknownFrame(addr)
	}
	var m *process.Mapping
	if leaf != nil && leaf.Mapping != nil {
		m = leaf.Mapping // the caller's
	} else {
		m = r.procs.Lookup(pid, addr, tm, false)
	}
	if m == nil {
		return r.unknownFrame(addr)
	}
	if m.Anon {
		if af, ok := r.anon(pid, addr, tm, leaf); ok {
			im := r.b.Image(profile.Image{Name: af.Image, Kind: profile.ImageAnon, Handler: af.Handler})
			fn := r.b.Func(profile.Func{Name: af.Func, Image: im, Addr: af.Start, File: af.File, Code: af.Code, Size: af.Size, Gen: af.Gen, Load: af.Load, Unload: af.Unload})
			fr := profile.Frame{Func: fn}
			if r.opts.Lines {
				fr.File, fr.Line = r.b.String(af.File), int32(af.Line)
			}
			if r.opts.Addresses {
				fr.Addr = addr
			}
			return r.b.Frame(fr)
		}
		k := cacheKey{mappingKey(m), 0}
		if r.opts.Addresses {
			k.addr = addr
		}
		if id, ok := r.cache[k]; ok {
			return id
		}
		name := fmt.Sprintf("anon (tgid:%d range:%#x-%#x)", m.PID, m.Start, m.End)
		if m.PID == AllProcesses {
			name = "anon (all processes)"
		}
		im := r.b.Image(profile.Image{Name: name, Kind: profile.ImageAnon, Start: m.Start, Limit: m.End})
		fn := r.b.Func(profile.Func{Name: name, Image: im, Addr: m.Start})
		id := r.b.Frame(profile.Frame{Func: fn, Addr: k.addr})
		r.cache[k] = id
		return id
	}
	// Cached by image and file offset (fileFrame), not by mapping: the
	// processes of one program share the first, and a live source's
	// Resolver would keep an entry for each place of each process the
	// machine ever ran.
	return r.fileFrame(m, addr, ret)
}

// anon asks the AnonResolver about JIT code at addr: by the leaf's
// sequence number when it has one, else by time.
func (r *Resolver) anon(pid uint32, addr, tm uint64, leaf *Sample) (AnonFrame, bool) {
	// An application's anonymous memory counted as one place has no
	// process whose JIT data could name it.
	if r.opts.Anon == nil || pid == AllProcesses {
		return AnonFrame{}, false
	}
	r.timed = true // JIT code changes at any time, not with mappings
	if leaf != nil && leaf.BySeq {
		r.exact = true
		if sr, ok := r.opts.Anon.(SeqResolver); ok {
			return sr.ResolveSeq(pid, addr, leaf.Seq)
		}
	}
	af, ok := r.opts.Anon.Resolve(pid, addr, tm)
	if !ok || !af.Held {
		r.exact = true
		return af, ok
	}
	r.validFrom = max(r.validFrom, af.Load)
	if af.Unload != 0 {
		r.validTo = min(r.validTo, af.Unload)
	}
	return af, true
}

func (r *Resolver) unknownFrame(addr uint64) int32 {
	k := cacheKey{cacheUnknown, addr}
	if id, ok := r.cache[k]; ok {
		return id
	}
	im := r.b.Image(profile.Image{Name: "[unknown]", Kind: profile.ImageUnknown})
	fn := r.b.Func(profile.Func{Name: fmt.Sprintf("0x%016x", addr), Image: im, Addr: addr, Unresolved: true})
	fr := profile.Frame{Func: fn}
	if r.opts.Addresses {
		fr.Addr = addr
	}
	id := r.b.Frame(fr)
	r.cache[k] = id
	return id
}

func (r *Resolver) kernelFrame(addr uint64) (id int32, spanned bool) {
	if !r.kernelLoaded {
		r.kernelLoaded = true
		r.kernel, r.kernelErr = r.opts.Symbolizer.Kernel()
	}
	var sym symbolize.Symbol
	var lo, hi uint64
	ok := false
	if r.kernel != nil {
		sym, lo, hi, ok = r.kernel.LookupSpan(addr)
	}
	if !ok || r.opts.Addresses {
		return r.newKernelFrame(addr, sym, ok), false
	}
	id, hit := r.ksyms[sym.Start]
	if !hit {
		id = r.newKernelFrame(addr, sym, ok)
		r.ksyms[sym.Start] = id
	}
	r.kspans = addSpan(r.kspans, span{lo, hi, id})
	return id, true
}

// span is a span of addresses or file offsets, [lo, hi), and what they
// resolve to: a frame (kspans), or a stack (loadedImage.leaves).
type span struct {
	lo, hi uint64
	id     int32
}

// maxSpans bounds a list of spans: the functions sampled, hundreds on
// a busy machine, of a kernel's 120,000 or a library's thousands.
const maxSpans = 1 << 14

// spanAt returns the id of the span of spans, in order, that holds a.
func spanAt(spans []span, a uint64) (int32, bool) {
	i, _ := slices.BinarySearchFunc(spans, a, func(s span, a uint64) int { return cmp.Compare(s.lo, a) })
	if i < len(spans) && spans[i].lo == a {
		return spans[i].id, true
	}
	if i > 0 && a < spans[i-1].hi {
		return spans[i-1].id, true
	}
	return 0, false
}

// addSpan adds s, which no span of spans holds any address of (the
// spans of one table do not overlap, and s's address was in none),
// emptying spans first when they are many.
func addSpan(spans []span, s span) []span {
	if len(spans) >= maxSpans {
		spans = spans[:0]
	}
	i, _ := slices.BinarySearchFunc(spans, s.lo, func(s span, a uint64) int { return cmp.Compare(s.lo, a) })
	return slices.Insert(spans, i, s)
}

func (r *Resolver) newKernelFrame(addr uint64, sym symbolize.Symbol, ok bool) int32 {
	name := "[kernel.kallsyms]"
	if ok && sym.Module != "" {
		name = "[" + sym.Module + "]"
	}
	im := r.b.Image(profile.Image{Name: name, Kind: profile.ImageKernel})
	if r.kernelErr != nil {
		r.b.SetNoSymbols(im, r.kernelErr.Error())
	}
	f := profile.Func{Image: im, Kernel: true}
	if ok {
		f.Name, f.Addr = sym.Name, sym.Start
	} else {
		f.Name, f.Addr, f.Unresolved = fmt.Sprintf("0x%016x", addr), addr, true
	}
	fr := profile.Frame{Func: r.b.Func(f)}
	if r.opts.Addresses {
		fr.Addr = addr
	}
	return r.b.Frame(fr)
}

// image returns the image of m and its id in the profile, which the
// first mapping of the image to be sampled describes.
func (r *Resolver) image(m *process.Mapping) *loadedImage {
	if r.sparse != nil {
		if li := r.sparse[m.ID]; li != nil {
			return li
		}
	} else if int(m.ID) < len(r.mapped) {
		if li := r.mapped[m.ID]; li != nil {
			return li
		}
	}
	k := imageKey{m.Path, m.BuildID}
	li, ok := r.images[k]
	if !ok {
		li = &loadedImage{id: -1, syms: map[uint64]int32{}}
		li.im, li.err = r.opts.Symbolizer.Open(m.Path, m.BuildID)
		r.images[k] = li
	}
	if li.err != nil && r.opts.Live != nil && (errors.Is(li.err, fs.ErrNotExist) || errors.Is(li.err, symbolize.ErrBuildIDMismatch)) {
		li = r.inProcess(m, li)
	}
	if li.id < 0 {
		img := profile.Image{Name: m.Path, BuildID: m.BuildID, Kind: profile.ImageFile, Start: m.Start, Limit: m.End, Offset: m.Pgoff}
		if img.BuildID == "" && li.im != nil {
			img.BuildID = li.im.BuildID()
		}
		li.id = r.b.Image(img)
		if li.err != nil {
			r.b.SetNoSymbols(li.id, li.err.Error())
		} else if li.im.NumSymbols() == 0 {
			r.b.SetNoSymbols(li.id, "no symbol table")
		}
	}
	if r.sparse != nil {
		r.sparse[m.ID] = li
		return li
	}
	if int(m.ID) >= len(r.mapped) {
		r.mapped = slices.Grow(r.mapped, int(m.ID)+1-len(r.mapped))[:m.ID+1]
	}
	r.mapped[m.ID] = li
	return li
}

// inProcess returns the image of m as m's process sees it, if it still
// runs and has it, else host, the host's failed one.
func (r *Resolver) inProcess(m *process.Mapping, host *loadedImage) *loadedImage {
	k := procImageKey{m.PID, imageKey{m.Path, m.BuildID}}
	if li, ok := r.inProc[k]; ok {
		return li
	}
	li := host
	if at, ok := r.opts.Live(m.PID); ok {
		if im, err := r.opts.Symbolizer.OpenIn(m.Path, m.BuildID, at); err == nil {
			li = &loadedImage{id: -1, syms: map[uint64]int32{}, im: im}
		}
	}
	r.inProc[k] = li
	return li
}

// offsetKey is a place in an image: its file offset, shifted left by
// one and the low bit set for a return address that names the call
// before it (with lines).
type offsetKey struct {
	li  *loadedImage
	off uint64
}

// offsetEntry is the frame of a place in an image, and with LeafOnly
// the stack of it alone (-1 until asked for).
type offsetEntry struct{ frame, leaf int32 }

func (r *Resolver) fileFrame(m *process.Mapping, addr uint64, ret bool) int32 {
	li := r.image(m)
	off := addr - m.Start + m.Pgoff
	ok := offsetKey{li, off << 1}
	if ret && r.opts.Lines {
		ok.off |= 1
	}
	if of, hit := r.byOffset[ok]; hit {
		return of.frame
	}
	id := r.offsetFrame(li, off, ret)
	r.byOffset[ok] = offsetEntry{id, -1}
	return id
}

// fileLeaf returns the stack of a LeafOnly sample at addr in m, a
// file's mapping: one lookup of its place in the image, whatever the
// process.
func (r *Resolver) fileLeaf(m *process.Mapping, addr uint64) int32 {
	li := r.lastImage
	if m != r.lastMapped {
		li = r.image(m)
		r.lastMapped, r.lastImage = m, li
	}
	off := addr - m.Start + m.Pgoff
	// Without lines or addresses a leaf is its function's: found by the
	// spans of the functions met, as the kernel's are (kspans), rather
	// than by file offset, a new one for nearly every sample.
	bySpan := li.err == nil && !r.opts.Lines && !r.opts.Addresses
	if bySpan {
		if leaf, ok := spanAt(li.leaves, off); ok {
			return leaf
		}
	}
	// Offsets in no function, and every offset with lines or
	// addresses, by offset: looked up in the table once each.
	ok := offsetKey{li, off << 1}
	of, hit := r.byOffset[ok]
	if !hit {
		if bySpan {
			if _, lo, hi, ok := li.im.LookupFileOffsetSpan(off); ok {
				leaf := r.b.Push(-1, r.offsetFrame(li, off, false))
				li.leaves = addSpan(li.leaves, span{lo, hi, leaf})
				return leaf
			}
		}
		of = offsetEntry{r.offsetFrame(li, off, false), -1}
	}
	if of.leaf < 0 {
		of.leaf = r.b.Push(-1, of.frame)
		r.byOffset[ok] = of
	}
	return of.leaf
}

// offsetFrame interns the frame at file offset off of image li.
func (r *Resolver) offsetFrame(li *loadedImage, off uint64, ret bool) int32 {
	var sym symbolize.Symbol
	ok := false
	if li.err == nil {
		sym, ok = li.im.LookupFileOffset(off)
	}
	// Without lines or addresses a frame is its symbol's.
	bySym := ok && !r.opts.Lines && !r.opts.Addresses
	if bySym {
		if id, hit := li.syms[sym.Start]; hit {
			return id
		}
	}
	// perf names an unresolved address by its offset in the file.
	f := profile.Func{Image: li.id, Name: sym.Name, Addr: sym.Start}
	if !ok {
		f.Name, f.Addr, f.Unresolved = fmt.Sprintf("0x%016x", off), off, true
		if li.im != nil && li.im.Stripped() != "" && !li.noted {
			// A stripped image's samples outside its exported
			// functions: the report says what would name them.
			r.b.SetStripped(li.id, li.im.Stripped())
			li.noted = true
		}
	}
	var fr profile.Frame
	if li.im != nil && (r.opts.Lines || r.opts.Addresses) {
		if va, vok := li.im.FileOffsetToAddr(off); vok {
			if r.opts.Addresses {
				fr.Addr = va
			}
			if r.opts.Lines {
				q := va
				if ret {
					q-- // name the call, not the statement after it
				}
				if frames, ferr := li.im.Frames(q); ferr == nil && len(frames) > 0 {
					fr.File = r.b.String(frames[0].File)
					fr.Line = int32(frames[0].Line)
					f.File = frames[len(frames)-1].File
				}
			}
		}
	}
	fr.Func = r.b.Func(f)
	id := r.b.Frame(fr)
	if bySym {
		li.syms[sym.Start] = id
	}
	return id
}
