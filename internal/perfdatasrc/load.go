package perfdatasrc

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/unwind"
	"github.com/jitprof/jitprof/perfdata"
)

// Options control Load.
type Options struct {
	// Symbolizer finds the images; nil means symbolize.New with defaults.
	Symbolizer *symbolize.Symbolizer
	// Anon names JIT code; nil leaves it in OProfile's anon buckets.
	Anon resolve.AnonResolver
	// Bind, when set, is called with the recording's timeline before
	// any sample is resolved, and returns the Anon to use: how a caller
	// chooses JIT handlers by the recorded processes when the timeline
	// and the samples come in one pass, as in a stream. (A DWARF
	// recording read in one pass asks BindEarly instead, or Bind once
	// its samples are resolved when it has no JIT code.)
	Bind func(*Timeline) (resolve.AnonResolver, error)
	// BindEarly, when set, is how a DWARF recording read in one pass
	// (onepass.go) binds the JIT handlers: it is called with the
	// timeline before the first record is read into it, and returns the
	// Anon to name JIT code with while the timeline grows, or nil when
	// its handlers cannot be bound so (the file is then read the
	// two-pass way if it has JIT code, and Bind asked).
	BindEarly func(*Timeline) (EarlyAnon, error)
	// Live, when set, is called with the recording's timeline and
	// returns where a process that still runs sees its own files
	// (resolve.Options.Live): images the host's paths do not give are
	// read there. (A DWARF recording read in one pass that needs it is
	// read again the two-pass way.)
	Live func(*Timeline) func(pid uint32) (symbolize.Place, bool)
	// Lines resolves a source line for every frame (DWARF).
	Lines bool
	// Addresses keeps each frame's image-relative address (annotate).
	Addresses bool
	// LeafOnly keeps only the sampled address of each stack, for flat
	// reports: the callchains are not resolved.
	LeafOnly bool
	// Times keeps the time of every sample (Entry.Times).
	Times bool
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
		opts.Symbolizer = symbolize.New(symbolize.Options{SymbolCache: true})
	}
	if kernelSampled(f) {
		go opts.Symbolizer.Kernel() // parse kallsyms while the timeline is read
	}
	if flatOK(f, opts) {
		p, ok, err := loadFlat(f, opts, nchunks, workers)
		if err != nil {
			return nil, err
		}
		if ok {
			return p, nil
		}
	}
	if onePassOK(f, opts) {
		p, ok, err := loadOnePass(f, opts)
		if err != nil {
			return nil, err
		}
		if ok {
			return p, nil
		}
	}
	return loadTwoPass(f, opts, nchunks, workers)
}

// loadTwoPass is load reading the timeline first, then the samples in
// parallel parts.
func loadTwoPass(f *perfdata.File, opts Options, nchunks, workers int) (*profile.Profile, error) {
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
	u := newUnwinder(f, tl, opts)
	parts := inParallel(len(chunks), workers, func(i int) part {
		p, err := loadChunk(f, chunks[i], tl, opts, u, &done)
		return part{p, err}
	})
	total := f.DataSize * 2
	b, err := merge(f, opts, parts, func() {
		if opts.Progress != nil {
			opts.Progress(f.DataSize+done.Load(), total)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return finishProfile(f, b, tl, u, opts, total), nil
}

// finishProfile fills the recording's fields of the profile and returns it.
func finishProfile(f *perfdata.File, b *profile.Builder, tl *Timeline, u *unwind.Unwinder, opts Options, total int64) *profile.Profile {
	meta := b.Meta()
	meta.Lost = tl.lost
	if u != nil {
		st := u.Stats()
		meta.Unwound = profile.UnwindStats{Chains: st.Chains, JITStops: st.Stops[unwind.StopJIT]}
	}
	meta.Cmdline, _ = f.Features.Cmdline()
	meta.Hostname, _ = f.Features.String(perfdata.FeatHostname)
	if c, err := f.Features.ClockData(); err == nil && c.WallNS != 0 {
		meta.WallNS, meta.ClockNS = c.WallNS, c.ClockNS
	}
	meta.Processes = processes(meta, tl)
	if opts.Progress != nil {
		opts.Progress(total, total)
	}
	return b.Profile()
}

// processes returns what tl knows of the processes of p's threads.
func processes(p *profile.Profile, tl *Timeline) []profile.Process {
	var out []profile.Process
	seen := map[uint32]bool{}
	for _, th := range p.Threads {
		if seen[th.PID] {
			continue
		}
		seen[th.PID] = true
		pr := profile.Process{PID: th.PID}
		if m := tl.Tracker.Executable(th.PID); m != nil {
			pr.Exe, pr.BuildID = m.Path, m.BuildID
		}
		out = append(out, pr)
	}
	slices.SortFunc(out, func(a, b profile.Process) int { return cmp.Compare(a.PID, b.PID) })
	return out
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
func merge(f *perfdata.File, opts Options, parts []chan part, tick func()) (*profile.Builder, error) {
	b := profile.NewBuilder()
	if opts.Times {
		b.KeepTimes()
	}
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

// newResolver returns a Resolver of f's samples, with tl's processes,
// into a new Builder, and the index of each of f's events in it.
func newResolver(f *perfdata.File, tl *Timeline, opts Options) (*resolve.Resolver, *profile.Builder, *eventIndex) {
	b := profile.NewBuilder()
	if opts.Times {
		b.KeepTimes()
	}
	ev := &eventIndex{attrs: f.Attrs}
	for _, a := range f.Attrs {
		b.Event(event(a))
	}
	if len(f.Attrs) > maxScan {
		ev.index = make(map[*perfdata.Attr]int32, len(f.Attrs))
		for i, a := range f.Attrs {
			ev.index[a] = int32(i)
		}
	}
	ro := resolve.Options{
		Symbolizer: opts.Symbolizer, Anon: opts.Anon,
		Lines: opts.Lines, Addresses: opts.Addresses, LeafOnly: opts.LeafOnly,
	}
	if opts.Live != nil {
		ro.Live = opts.Live(tl)
	}
	r := resolve.New(b, tl.Tracker, ro)
	return r, b, ev
}

// eventIndex finds the profile's event of a sample's attr: the attr's index
// in the file, the order the events were added in.
type eventIndex struct {
	attrs []*perfdata.Attr
	index map[*perfdata.Attr]int32 // with more than maxScan attrs
}

// maxScan is the number of attrs up to which a scan beats hashing.
const maxScan = 8

func (e *eventIndex) of(a *perfdata.Attr) int32 {
	if e.index != nil {
		return e.index[a]
	}
	for i, x := range e.attrs {
		if x == a {
			return int32(i)
		}
	}
	return 0
}

// toSample fills out with what the Resolver needs of s.
func toSample(s *perfdata.Sample, events *eventIndex, out *resolve.Sample) {
	// Field by field: a composite literal would clear the whole struct
	// first, for every sample.
	out.CPU = -1
	if s.Has(perfdata.SampleCPU) {
		out.CPU = int32(s.CPU)
	}
	out.PID, out.TID, out.Time = s.PID, s.TID, s.Timestamp()
	out.Mode, out.IP, out.Callchain = resolve.Mode(s.CPUMode()), s.IP, s.Callchain
	out.Event, out.Count, out.Period = events.of(s.Attr), 1, s.Period
	out.BySeq, out.Seq = false, 0
}

// widen widens the profile's span of time to tm.
func widen(meta *profile.Profile, tm uint64) {
	if meta.StartNS == 0 || tm < meta.StartNS {
		meta.StartNS = tm
	}
	meta.EndNS = max(meta.EndNS, tm)
}

func loadChunk(f *perfdata.File, c perfdata.Chunk, tl *Timeline, opts Options, u *unwind.Unwinder, done *atomic.Int64) (*profile.Builder, error) {
	res, b, events := newResolver(f, tl, opts)
	sw := newStackWalker(u)
	defer sw.flush()
	r := f.RecordsIn(c)
	r.SkipCallchains = opts.LeafOnly
	r.Sequential = true // a sample is resolved before the next is read
	rel := releaser{f, c.Start, done}
	var rs resolve.Sample
	meta := b.Meta()
	for r.Next() {
		if s, ok := r.Record().(*perfdata.Sample); ok {
			toSample(s, events, &rs)
			rs.Callchain = sw.callchain(s)
			widen(meta, rs.Time)
			res.Add(&rs)
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

func event(a *perfdata.Attr) profile.Event {
	e := profile.Event{Name: perfdata.EventName(a)}
	if a.Freq() {
		e.Freq = a.SamplePeriod
	} else {
		e.Period = a.SamplePeriod
	}
	return e
}
