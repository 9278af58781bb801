package session

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/perfdata"
)

// AnonResolver names code in anonymous executable memory: what a JIT
// had generated at addr in process pid at time. It returns false for
// addresses it does not know, which then fall in the mapping's anon bucket.
type AnonResolver interface {
	Resolve(pid uint32, addr, time uint64) (AnonFrame, bool)
}

// AnonFrame is what an AnonResolver knows about an address.
type AnonFrame struct {
	Func  string // the JIT's name for the code
	Image string // the image to report it under, e.g. "[JIT] node"
	Start uint64 // start address of the code
	File  string
	Line  int
	Code  []byte // its machine code, when the JIT logged it
	Size  uint64 // the code's length in bytes
	Gen   uint64 // its generation, when the JIT data tells them apart
	// Load and Unload are when the code was there (the recording's
	// clock): 0 when the JIT data has no times, Unload also while the
	// code still is.
	Load, Unload uint64
}

// Options control Load.
type Options struct {
	// Symbolizer finds the images; nil means symbolize.New with defaults.
	Symbolizer *symbolize.Symbolizer
	// Anon names JIT code; nil leaves it in OProfile's anon buckets.
	Anon AnonResolver
	// Bind, when set, is called with the recording's timeline before
	// any sample is resolved, and returns the Anon to use: how a caller
	// chooses JIT handlers by the recorded processes when the timeline
	// and the samples come in one pass, as in a stream.
	Bind func(*Timeline) (AnonResolver, error)
	// Lines resolves a source line for every frame (DWARF).
	Lines bool
	// Addresses keeps each frame's image-relative address (annotate).
	Addresses bool
	// LeafOnly keeps only the sampled address of each stack, for flat
	// reports: the callchains are not resolved.
	LeafOnly bool
	// Timeline, when set, is the file's timeline from BuildTimeline,
	// which Load then does not build again.
	Timeline *Timeline
	// Progress, when set, is called now and then with the bytes of
	// records read and the total.
	Progress func(done, total int64)
}

// Load replays a recording into a profile. It reads the samples in
// parallel, in parts that it merges in file order, so the profile is the
// same as one read in a single pass; a pipe-mode stream, which can be
// read once, it reads in one pass.
func Load(f *perfdata.File, opts Options) (*profile.Profile, error) {
	workers := runtime.GOMAXPROCS(0)
	// A part per worker would do on idle cores; more parts let a worker
	// on a busy core do less, for a little more merging.
	return load(f, opts, min(2*workers, int(f.DataSize/minChunk)+1), workers)
}

// minChunk keeps small recordings in one part: merging parts costs more
// than reading them.
const minChunk = 8 << 20

// load reads the samples in at most nchunks parts with that many workers.
func load(f *perfdata.File, opts Options, nchunks, workers int) (*profile.Profile, error) {
	if f.Pipe {
		return loadStream(f, opts)
	}
	if opts.Symbolizer == nil {
		opts.Symbolizer = symbolize.New(symbolize.Options{})
	}
	if kernelSampled(f) {
		go opts.Symbolizer.Kernel() // parse kallsyms while the timeline is read
	}
	if flatOK(f, opts) {
		if p, ok := loadFlat(f, opts, nchunks, workers); ok {
			return p, nil
		}
	}
	tl := opts.Timeline
	if tl == nil {
		var err error
		if tl, err = buildTimeline(f, opts.Progress); err != nil {
			return nil, err
		}
	}
	if opts.Bind != nil {
		var err error
		if opts.Anon, err = opts.Bind(tl); err != nil {
			return nil, err
		}
	}
	chunks := tl.chunks(f, nchunks)
	var done atomic.Int64
	parts := inParallel(len(chunks), workers, func(i int) part {
		p, err := loadChunk(f, chunks[i], tl, opts, &done)
		return part{p, err}
	})
	total := f.DataSize * 2
	b, err := merge(f, parts, func() {
		if opts.Progress != nil {
			opts.Progress(f.DataSize+done.Load(), total)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	return finishProfile(f, b, tl, opts, total), nil
}

// finishProfile fills the recording's fields of the profile and returns it.
func finishProfile(f *perfdata.File, b *profile.Builder, tl *Timeline, opts Options, total int64) *profile.Profile {
	meta := b.Meta()
	meta.Lost = tl.lost
	meta.Cmdline, _ = f.Features.Cmdline()
	meta.Hostname, _ = f.Features.String(perfdata.FeatHostname)
	if opts.Progress != nil {
		opts.Progress(total, total)
	}
	return b.Profile()
}

// inParallel runs job(0) to job(n-1) on at most workers goroutines, in
// order of i, and returns a channel per job for its result.
func inParallel[T any](n, workers int, job func(i int) T) []chan T {
	out := make([]chan T, n)
	for i := range out {
		out[i] = make(chan T, 1)
	}
	var next atomic.Int64
	for range min(workers, n) {
		go func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				out[i] <- job(i)
			}
		}()
	}
	return out
}

// tickEvery is how often a wait for parts reports progress.
const tickEvery = 50 * time.Millisecond

// receive waits for a value from ch, calling tick at each tick of t.
func receive[T any](ch chan T, t *time.Ticker, tick func()) T {
	for {
		select {
		case v := <-ch:
			return v
		case <-t.C:
			tick()
		}
	}
}

// part is the profile of one chunk of a recording, unsorted.
type part struct {
	b   *profile.Builder
	err error
}

// merge merges the parts, in order, into one profile of f's events,
// calling tick now and then while it waits. It returns the first part's
// error, as one pass would meet it.
func merge(f *perfdata.File, parts []chan part, tick func()) (*profile.Builder, error) {
	b := profile.NewBuilder()
	meta := b.Meta()
	for _, a := range f.Attrs {
		b.Event(event(a))
	}
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	var err error
	for _, ch := range parts {
		pt := receive(ch, t, tick)
		if err != nil || pt.err != nil {
			err = cmp.Or(err, pt.err)
			continue
		}
		if len(parts) == 1 {
			return pt.b, nil
		}
		b.Merge(pt.b.Meta())
		p := pt.b.Meta()
		if p.StartNS != 0 && (meta.StartNS == 0 || p.StartNS < meta.StartNS) {
			meta.StartNS = p.StartNS
		}
		meta.EndNS = max(meta.EndNS, p.EndNS)
	}
	return b, err
}

// releaseEvery is how many bytes of records a worker reads before it
// lets their pages go, which keeps the mapped file out of the memory
// a report takes.
const releaseEvery = 4 << 20

// releaser lets the pages of the records a reader has read go, every
// releaseEvery bytes, and counts them in done (when not nil).
type releaser struct {
	f    *perfdata.File
	at   int64 // the records before it are let go
	done *atomic.Int64
}

// readTo says the reader has read the records before off.
func (r *releaser) readTo(off int64) {
	if off-r.at >= releaseEvery {
		r.finish(off)
	}
}

// finish lets go all the records before off.
func (r *releaser) finish(off int64) {
	r.f.Release(perfdata.Chunk{Start: r.at, End: off})
	if r.done != nil {
		r.done.Add(off - r.at)
	}
	r.at = off
}

// newLoader returns a loader of f's samples into a new Builder.
func newLoader(f *perfdata.File, tl *Timeline, opts Options) *loader {
	b := profile.NewBuilder()
	l := &loader{
		tl: tl, opts: opts, b: b,
		cache:   map[cacheKey]int32{},
		images:  map[imageKey]*loadedImage{},
		mapped:  make([]*loadedImage, len(tl.Mappings)),
		ksyms:   map[uint64]int32{},
		events:  map[*perfdata.Attr]int32{},
		threads: map[uint64]threadState{},
		chains:  map[uint64]chainEntry{},
		leaves:  map[leafKey]int32{},
	}
	for _, a := range f.Attrs {
		l.events[a] = b.Event(event(a))
	}
	return l
}

func loadChunk(f *perfdata.File, c perfdata.Chunk, tl *Timeline, opts Options, done *atomic.Int64) (*profile.Builder, error) {
	l := newLoader(f, tl, opts)
	b := l.b
	r := f.RecordsIn(c)
	r.SkipCallchains = opts.LeafOnly
	rel := releaser{f, c.Start, done}
	for r.Next() {
		if s, ok := r.Record().(*perfdata.Sample); ok {
			l.sample(s)
		}
		rel.readTo(r.Offset())
	}
	rel.finish(c.End)
	return b, r.Err()
}

// kernelSampled reports whether the recording may hold kernel samples.
func kernelSampled(f *perfdata.File) bool {
	for _, a := range f.Attrs {
		if a.Flags&perfdata.FlagExcludeKernel == 0 {
			return true
		}
	}
	return false
}

// EventName is perf's name for an attr's event when the file does not
// name it.
func EventName(a *perfdata.Attr) string {
	if a.Name != "" {
		return a.Name
	}
	if a.Type == perfdata.TypeSoftware {
		names := []string{"cpu-clock", "task-clock", "page-faults", "context-switches", "cpu-migrations", "minor-faults", "major-faults", "alignment-faults", "emulation-faults", "dummy"}
		if a.Config < uint64(len(names)) {
			return names[a.Config]
		}
	}
	if a.Type == perfdata.TypeHardware {
		names := []string{"cycles", "instructions", "cache-references", "cache-misses", "branches", "branch-misses", "bus-cycles"}
		if a.Config < uint64(len(names)) {
			return names[a.Config]
		}
	}
	return fmt.Sprintf("event:%d:%#x", a.Type, a.Config)
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

// mappingKey is cacheKey.mapping for the frames of mapping m: of its
// return addresses, when ret, or of the others.
func mappingKey(m *Mapping, ret bool) int64 {
	k := int64(m.ID) << 1
	if ret {
		k |= 1
	}
	return k
}

type imageKey struct{ path, buildID string }

type loadedImage struct {
	im    *symbolize.Image
	err   error
	noted bool  // Stripped said in the profile
	id    int32 // in the profile; -1 until a sample falls in the image
	// syms are the frames of the image's symbols met, by symbol start:
	// interning a frame hashes its names, a symbol lookup does not.
	syms map[uint64]int32
}

type loader struct {
	tl     *Timeline
	opts   Options
	b      *profile.Builder
	cache  map[cacheKey]int32
	images map[imageKey]*loadedImage
	mapped []*loadedImage   // by Mapping.ID
	ksyms  map[uint64]int32 // frames of the kernel symbols met, by start
	events map[*perfdata.Attr]int32

	kernel       *symbolize.Kernel
	kernelErr    error
	kernelLoaded bool

	frames  []int32
	threads map[uint64]threadState // by pid<<32 | tid

	chains map[uint64]chainEntry // by hash of the key words
	leaves map[leafKey]int32     // the stacks of LeafOnly
	arena  []uint64              // key words of the chains
	key    []uint64              // the current sample's key words
	timed  bool                  // the current stack depends on more than the epoch
}

type threadState struct {
	from, to uint64 // the span of time in which the rest holds
	comm     string
	id       int32 // the interned thread
	epoch    uint64
}

func event(a *perfdata.Attr) profile.Event {
	e := profile.Event{Name: EventName(a)}
	if a.Freq() {
		e.Freq = a.SamplePeriod
	} else {
		e.Period = a.SamplePeriod
	}
	return e
}

func (l *loader) sample(s *perfdata.Sample) {
	tm := recTime(&s.Common)
	meta := l.b.Meta()
	if meta.StartNS == 0 || tm < meta.StartNS {
		meta.StartNS = tm
	}
	meta.EndNS = max(meta.EndNS, tm)

	th := l.thread(s.PID, s.TID, tm)
	node := l.stack(s, tm, th.epoch)
	cpu := int32(-1)
	if s.Has(perfdata.SampleCPU) {
		cpu = int32(s.CPU)
	}
	l.b.Add(profile.Key{Stack: node, Thread: th.id, CPU: cpu, Event: l.events[s.Attr]}, 1, s.Period)
}

// thread returns what the timeline says of a thread at tm, asking it
// once per span of time in which the answer holds.
func (l *loader) thread(pid, tid uint32, tm uint64) threadState {
	ts := l.span(pid, tid, tm)
	// Interning the thread hashes its name: do it only when the name
	// changes.
	if ts.id < 0 {
		ts.id = l.b.Thread(profile.Thread{PID: pid, TID: tid, Comm: l.b.String(ts.comm)})
		l.threads[uint64(pid)<<32|uint64(tid)] = ts
	}
	return ts
}

// span is thread without interning the thread, whose id is -1 until
// thread interns it.
func (l *loader) span(pid, tid uint32, tm uint64) threadState {
	k := uint64(pid)<<32 | uint64(tid)
	ts, ok := l.threads[k]
	if ok && ts.from <= tm && tm < ts.to {
		return ts
	}
	epoch, comm, from, to := l.tl.threadSpan(pid, tid, tm)
	if !ok || ts.comm != comm {
		ts.comm, ts.id = comm, -1
	}
	ts.epoch, ts.from, ts.to = epoch, from, to
	l.threads[k] = ts
	return ts
}

// leafKey is the key words of a stack without its callchain.
type leafKey struct{ pidMode, epoch, ip uint64 }

// chainEntry is a resolved callchain: its key words in loader.arena and
// its leaf node.
type chainEntry struct {
	off, n int
	node   int32
}

// stack returns the leaf node of the sample's stack. A callchain resolves
// the same way in a process as long as its mappings do not change, so
// each is resolved once per epoch and then found by its hash.
func (l *loader) stack(s *perfdata.Sample, tm, epoch uint64) int32 {
	if l.opts.LeafOnly {
		// One lookup of a fixed-size key, without the hashing and
		// comparing a chain of any length needs.
		k := leafKey{uint64(s.PID)<<32 | uint64(s.CPUMode()), epoch, s.IP}
		if node, ok := l.leaves[k]; ok {
			return node
		}
		l.timed = false
		node := l.resolve(s, tm)
		if !l.timed {
			l.leaves[k] = node
		}
		return node
	}
	key := append(l.key[:0], uint64(s.PID)<<32|uint64(s.CPUMode()), epoch, s.IP)
	key = append(key, s.Callchain...)
	l.key = key
	h := uint64(len(key))
	for _, w := range key {
		h = (h ^ w) * 0x9e3779b97f4a7c15
		h ^= h >> 29
	}
	e, found := l.chains[h]
	if found && slices.Equal(l.arena[e.off:e.off+e.n], key) {
		return e.node
	}
	l.timed = false
	node := l.resolve(s, tm)
	if !found && !l.timed {
		l.chains[h] = chainEntry{len(l.arena), len(key), node}
		l.arena = append(l.arena, key...)
	}
	return node
}

// resolve interns the sample's stack and returns its leaf node.
func (l *loader) resolve(s *perfdata.Sample, tm uint64) int32 {
	pid := s.PID
	mode := s.CPUMode()
	l.frames = l.frames[:0]
	l.frames = append(l.frames, l.frame(pid, s.IP, tm, mode, false))
	skipIP := true
	for _, ip := range s.Callchain { // empty when LeafOnly
		if ip >= perfdata.CallchainContextMax {
			switch ip {
			case perfdata.CallchainKernel:
				mode = perfdata.MiscKernel
			case perfdata.CallchainUser:
				mode = perfdata.MiscUser
			default:
				mode = perfdata.MiscGuestKernel // never resolved
			}
			continue
		}
		if skipIP {
			skipIP = false
			if ip == s.IP {
				continue
			}
		}
		l.frames = append(l.frames, l.frame(pid, ip, tm, mode, true))
	}
	node := int32(-1)
	for i := len(l.frames) - 1; i >= 0; i-- {
		node = l.b.Push(node, l.frames[i])
	}
	return node
}

// frame resolves one address to an interned frame.
func (l *loader) frame(pid uint32, addr, tm uint64, mode uint16, ret bool) int32 {
	switch mode {
	case perfdata.MiscKernel, perfdata.MiscHypervisor:
		if l.opts.LeafOnly {
			return l.kernelFrame(addr) // stack caches the address already
		}
		k := cacheKey{cacheKernel, addr}
		if id, ok := l.cache[k]; ok {
			return id
		}
		id := l.kernelFrame(addr)
		l.cache[k] = id
		return id
	case perfdata.MiscUser:
	default:
		return l.unknownFrame(addr)
	}
	m := l.tl.Lookup(pid, addr, tm, false)
	if m == nil {
		return l.unknownFrame(addr)
	}
	if m.Anon {
		if l.opts.Anon != nil {
			l.timed = true // JIT code changes at any time, not with mappings
			if af, ok := l.opts.Anon.Resolve(pid, addr, tm); ok {
				im := l.b.Image(profile.Image{Name: af.Image, Kind: profile.ImageAnon})
				fn := l.b.Func(profile.Func{Name: af.Func, Image: im, Addr: af.Start, File: af.File, Code: af.Code, Size: af.Size, Gen: af.Gen, Load: af.Load, Unload: af.Unload})
				fr := profile.Frame{Func: fn}
				if l.opts.Lines {
					fr.File, fr.Line = l.b.String(af.File), int32(af.Line)
				}
				if l.opts.Addresses {
					fr.Addr = addr
				}
				return l.b.Frame(fr)
			}
		}
		k := cacheKey{mappingKey(m, false), 0}
		if l.opts.Addresses {
			k.addr = addr
		}
		if id, ok := l.cache[k]; ok {
			return id
		}
		name := fmt.Sprintf("anon (tgid:%d range:%#x-%#x)", m.PID, m.Start, m.End)
		im := l.b.Image(profile.Image{Name: name, Kind: profile.ImageAnon, Start: m.Start, Limit: m.End})
		fn := l.b.Func(profile.Func{Name: name, Image: im, Addr: m.Start})
		id := l.b.Frame(profile.Frame{Func: fn, Addr: k.addr})
		l.cache[k] = id
		return id
	}
	if l.opts.LeafOnly {
		return l.fileFrame(m, addr, ret)
	}
	// With lines, a return address names the call before it, and the
	// sampled address its own line: two frames for one address.
	k := cacheKey{mappingKey(m, ret && l.opts.Lines), addr}
	if id, ok := l.cache[k]; ok {
		return id
	}
	id := l.fileFrame(m, addr, ret)
	l.cache[k] = id
	return id
}

func (l *loader) unknownFrame(addr uint64) int32 {
	k := cacheKey{cacheUnknown, addr}
	if id, ok := l.cache[k]; ok {
		return id
	}
	im := l.b.Image(profile.Image{Name: "[unknown]", Kind: profile.ImageUnknown})
	fn := l.b.Func(profile.Func{Name: fmt.Sprintf("0x%016x", addr), Image: im, Addr: addr, Unresolved: true})
	fr := profile.Frame{Func: fn}
	if l.opts.Addresses {
		fr.Addr = addr
	}
	id := l.b.Frame(fr)
	l.cache[k] = id
	return id
}

func (l *loader) kernelFrame(addr uint64) int32 {
	if !l.kernelLoaded {
		l.kernelLoaded = true
		l.kernel, l.kernelErr = l.opts.Symbolizer.Kernel()
	}
	var sym symbolize.Symbol
	ok := false
	if l.kernel != nil {
		sym, ok = l.kernel.Lookup(addr)
	}
	if !ok || l.opts.Addresses {
		return l.newKernelFrame(addr, sym, ok)
	}
	id, hit := l.ksyms[sym.Start]
	if !hit {
		id = l.newKernelFrame(addr, sym, ok)
		l.ksyms[sym.Start] = id
	}
	return id
}

func (l *loader) newKernelFrame(addr uint64, sym symbolize.Symbol, ok bool) int32 {
	name := "[kernel.kallsyms]"
	if ok && sym.Module != "" {
		name = "[" + sym.Module + "]"
	}
	im := l.b.Image(profile.Image{Name: name, Kind: profile.ImageKernel})
	if l.kernelErr != nil {
		l.b.SetNoSymbols(im, l.kernelErr.Error())
	}
	f := profile.Func{Image: im, Kernel: true}
	if ok {
		f.Name, f.Addr = sym.Name, sym.Start
	} else {
		f.Name, f.Addr, f.Unresolved = fmt.Sprintf("0x%016x", addr), addr, true
	}
	fr := profile.Frame{Func: l.b.Func(f)}
	if l.opts.Addresses {
		fr.Addr = addr
	}
	return l.b.Frame(fr)
}

// image returns the image of m and its id in the profile, which the
// first mapping of the image to be sampled describes.
func (l *loader) image(m *Mapping) *loadedImage {
	if li := l.mapped[m.ID]; li != nil {
		return li
	}
	k := imageKey{m.Path, m.BuildID}
	li, ok := l.images[k]
	if !ok {
		li = &loadedImage{id: -1, syms: map[uint64]int32{}}
		li.im, li.err = l.opts.Symbolizer.Open(m.Path, m.BuildID)
		l.images[k] = li
	}
	if li.id < 0 {
		img := profile.Image{Name: m.Path, BuildID: m.BuildID, Kind: profile.ImageFile, Start: m.Start, Limit: m.End, Offset: m.Pgoff}
		if img.BuildID == "" && li.im != nil {
			img.BuildID = li.im.BuildID()
		}
		li.id = l.b.Image(img)
		if li.err != nil {
			l.b.SetNoSymbols(li.id, li.err.Error())
		} else if li.im.NumSymbols() == 0 {
			l.b.SetNoSymbols(li.id, "no symbol table")
		}
	}
	l.mapped[m.ID] = li
	return li
}

func (l *loader) fileFrame(m *Mapping, addr uint64, ret bool) int32 {
	li := l.image(m)
	off := addr - m.Start + m.Pgoff
	var sym symbolize.Symbol
	ok := false
	if li.err == nil {
		sym, ok = li.im.LookupFileOffset(off)
	}
	// Without lines or addresses a frame is its symbol's.
	bySym := ok && !l.opts.Lines && !l.opts.Addresses
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
			l.b.SetStripped(li.id, li.im.Stripped())
			li.noted = true
		}
	}
	var fr profile.Frame
	if li.im != nil && (l.opts.Lines || l.opts.Addresses) {
		if va, vok := li.im.FileOffsetToAddr(off); vok {
			if l.opts.Addresses {
				fr.Addr = va
			}
			if l.opts.Lines {
				q := va
				if ret {
					q-- // name the call, not the statement after it
				}
				if frames, ferr := li.im.Frames(q); ferr == nil && len(frames) > 0 {
					fr.File = l.b.String(frames[0].File)
					fr.Line = int32(frames[0].Line)
					f.File = frames[len(frames)-1].File
				}
			}
		}
	}
	fr.Func = l.b.Func(f)
	id := l.b.Frame(fr)
	if bySym {
		li.syms[sym.Start] = id
	}
	return id
}
