package top

import (
	"cmp"
	"encoding/binary"
	"slices"
	"sync"
	"time"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/anonbind"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/record"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/perfdata"
)

// JIT says how a live view names JIT code.
type JIT struct {
	// Handlers makes the anon handlers (anon.Select's, fresh each call:
	// handlers keep what they read, and a live view reads again); nil
	// leaves JIT code in anon buckets.
	Handlers func() ([]anon.Handler, error)
	// PyPyLog is the FILE of the PYPYLOG of the command top runs, "" for
	// none.
	PyPyLog string
	Force   bool
}

// renewEvery is how often JIT data is read again while samples fall in
// JIT code: the samples wait for it (at most that long), so that each
// is named by data written after it was taken, never by a generation a
// JIT had replaced by then.
const renewEvery = 500 * time.Millisecond

// live is the record.Sink of a live view: each round's samples resolved
// into one profile.Builder, whose interned tables and cumulative counts
// the view reads at every refresh (snapshot).
type live struct {
	mu sync.Mutex

	dec     *perfdata.Decoder
	attr    *perfdata.Attr
	sym     *symbolize.Symbolizer
	jit     JIT
	b       *profile.Builder
	res     *resolve.Resolver
	procs   liveProcs
	anon    *anonbind.Live // nil without JIT handlers
	pending []resolve.Sample
	// jitPending are samples in anonymous memory waiting for JIT data
	// read after them (renewEvery).
	jitPending []resolve.Sample
	lost       uint64
	samples    uint64 // in all, for the header

	// The decayed counts per entry of the Builder, and the cumulative
	// ones they were last brought up to.
	decayed []decayed
	seen    []profile.Value
	// maxEntries bounds the entries with a count left: the smallest
	// beyond it are dropped.
	maxEntries int
	// chains says samples are resolved with their callchains.
	chains bool
	// symAt is when sym last let go of the images it read (compact).
	symAt time.Time
}

// renewSymbolsEvery is how often compact may have the Symbolizer let go
// of the images whose symbols it read into memory (a machine running its
// test suite maps a new executable every few seconds, each a megabyte of
// symbols): those still sampled are read again. Those mapped from the
// symbol cache stay (symbolize.Symbolizer.ForgetImages).
const renewSymbolsEvery = time.Minute

// maxEntries is the most entries a view keeps (live.maxEntries): a view
// of a machine that runs new processes all the time, or of a JIT that
// generates new code for ever, stays bounded when entries come faster
// than they decay (about 200 bytes each, more with their functions).
const maxEntries = 50000

// compactMin is the fewest entries a Builder holds before it is
// compacted (compact): below, the work is not worth it.
const compactMin = 4096

type decayed struct{ count, period float64 }

// newLive returns the sink of the events attr describes; chains says
// their callchains are resolved too.
func newLive(attr *perfdata.Attr, jit JIT, chains bool) *live {
	dec := perfdata.NewDecoder([]*perfdata.Attr{attr})
	dec.FixedSampleFields = !chains // what a flat view needs
	b := profile.NewBuilder()
	name := attr.Name
	ev := profile.Event{Name: name}
	if attr.Freq() {
		ev.Freq = attr.SamplePeriod
	} else {
		ev.Period = attr.SamplePeriod
	}
	b.Event(ev)
	l := &live{dec: dec, attr: attr, jit: jit, b: b, sym: symbolize.New(symbolize.Options{SymbolCache: true}), symAt: time.Now(), maxEntries: maxEntries, chains: chains}
	if jit.Handlers != nil {
		l.anon = &anonbind.Live{}
	}
	return l
}

// Raw takes the kernel's records: samples wait for the end of the round,
// the rest the Recorder's Tracker takes.
func (l *live) Raw(raw []byte) error {
	switch perfdata.RecordType(binary.NativeEndian.Uint32(raw)) {
	case perfdata.RecordSample:
	case perfdata.RecordLost, perfdata.RecordLostSamples:
		if rec, err := l.dec.Decode(raw); err == nil {
			switch v := rec.(type) {
			case *perfdata.Lost:
				l.lost += v.Lost
			case *perfdata.LostSamples:
				l.lost += v.Lost
			}
		}
		return nil
	default:
		return nil
	}
	rec, err := l.dec.Decode(raw)
	if err != nil {
		return nil
	}
	s, ok := rec.(*perfdata.Sample)
	if !ok || !s.Has(perfdata.SampleIP) || !s.Has(perfdata.SampleTID) {
		return nil
	}
	cpu := int32(-1)
	if s.Has(perfdata.SampleCPU) {
		cpu = int32(s.CPU)
	}
	period := s.Period
	if !s.Has(perfdata.SamplePeriod) {
		period = l.attr.SamplePeriod
	}
	rs := resolve.Sample{PID: s.PID, TID: s.TID, Time: s.Time, CPU: cpu,
		Mode: resolve.Mode(s.Misc & perfdata.MiscCPUModeMask), IP: s.IP, Count: 1, Period: period}
	if l.chains {
		rs.Callchain = slices.Clone(s.Callchain) // the decoder's is reused
	}
	l.pending = append(l.pending, rs)
	return nil
}

// Record takes what the recorder synthesized: its Tracker has it.
func (l *live) Record(perfdata.Record) error { return nil }

// Written is nothing: a live view keeps counts, not records.
func (l *live) Written() int64 { return 0 }

// EndRound resolves the round's samples against the processes and
// mappings the Recorder knows. Samples in anonymous memory wait, when
// JIT code is named, until the JIT data is read again after them.
func (l *live) EndRound(r *record.Recorder) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.procs.r = r
	t := r.Tracker()
	if l.res == nil {
		var ar resolve.AnonResolver
		if l.anon != nil {
			ar = l.anon
		}
		l.res = resolve.New(l.b, t, resolve.Options{Symbolizer: l.sym, Anon: ar, Addresses: true, LeafOnly: !l.chains, SparseMappings: true})
	}
	for i := range l.pending {
		s := &l.pending[i]
		if l.anon != nil && inJIT(t, s) {
			l.jitPending = append(l.jitPending, *s)
			continue
		}
		l.res.Add(s)
	}
	l.samples += uint64(len(l.pending))
	l.pending = l.pending[:0]
	if len(l.jitPending) > 0 && l.renewAnon(false) {
		for i := range l.jitPending {
			l.res.Add(&l.jitPending[i])
		}
		l.jitPending = l.jitPending[:0]
	}
	return nil
}

// inJIT reports whether s ran in anonymous memory, or, with a
// callchain, was called from there: JIT code, to be named by JIT data
// read after s.
func inJIT(t *process.Tracker, s *resolve.Sample) bool {
	anon := func(ip uint64) bool {
		m := t.Lookup(s.PID, ip, s.Time, false)
		return m != nil && m.Anon
	}
	if s.Mode == resolve.ModeUser && anon(s.IP) {
		return true
	}
	user := s.Mode == resolve.ModeUser
	for _, ip := range s.Callchain {
		if ip >= resolve.ContextMax {
			user = ip == resolve.ContextUser
			continue
		}
		if user && anon(ip) {
			return true
		}
	}
	return false
}

// flush names the samples in JIT code still waiting, once the
// recording has ended and no round will.
func (l *live) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.jitPending) == 0 || l.res == nil {
		return
	}
	l.renewAnon(true)
	for i := range l.jitPending {
		l.res.Add(&l.jitPending[i])
	}
	l.jitPending = l.jitPending[:0]
}

// close releases the JIT handlers (external ones are processes).
func (l *live) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.anon != nil {
		l.anon.Close()
	}
}

// snapshot brings the decayed counts up to the Builder's (zero: only
// what came since the last snapshot) and returns a profile of them:
// the Builder's tables, copied, and an entry per place with a count
// left. Claims say how JIT code was named. peek returns the counts as
// they are, changing nothing.
func (l *live) snapshot(zero bool) (*profile.Profile, []anonbind.Claim, Stats) {
	return l.counts(zero, true)
}

func (l *live) peek() *profile.Profile {
	p, _, _ := l.counts(false, false)
	return p
}

func (l *live) counts(zero, advance bool) (*profile.Profile, []anonbind.Claim, Stats) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.b.Meta()
	for len(l.decayed) < len(m.Entries) {
		l.decayed = append(l.decayed, decayed{})
		l.seen = append(l.seen, profile.Value{})
	}
	p := &profile.Profile{
		Events: slices.Clone(m.Events), Images: slices.Clone(m.Images), Funcs: slices.Clone(m.Funcs),
		Frames: m.Frames, Nodes: m.Nodes, Threads: m.Threads, Strings: m.Strings, Lost: l.lost,
	}
	for i := range p.Events {
		p.Events[i].Count, p.Events[i].Total = 0, 0
	}
	var recent uint64
	var left []int32 // the entries with a count left
	for i, e := range m.Entries {
		d := &l.decayed[i]
		dc, dp := e.Count-l.seen[i].Count, e.Period-l.seen[i].Period
		recent += dc
		switch {
		case !advance:
		case zero:
			l.seen[i] = e.Value
			d.count, d.period = float64(dc), float64(dp)
		default:
			// perf top's decay: an entry loses an eighth at each
			// refresh, and gains what came since.
			l.seen[i] = e.Value
			d.count, d.period = d.count*7/8+float64(dc), d.period*7/8+float64(dp)
		}
		if uint64(d.count+0.5) > 0 {
			left = append(left, int32(i))
		}
	}
	if len(left) > l.maxEntries {
		// The smallest go, as perf top's entries that decay to nothing.
		slices.SortFunc(left, func(a, b int32) int { return cmp.Compare(l.decayed[b].period, l.decayed[a].period) })
		if advance {
			for _, i := range left[l.maxEntries:] {
				l.decayed[i] = decayed{}
			}
		}
		left = left[:l.maxEntries]
		slices.Sort(left)
	}
	for _, i := range left {
		e, d := &m.Entries[i], &l.decayed[i]
		v := profile.Value{Count: uint64(d.count + 0.5), Period: uint64(d.period + 0.5)}
		p.Entries = append(p.Entries, profile.Entry{Key: e.Key, Value: v})
		p.Events[e.Event].Count += v.Count
		p.Events[e.Event].Total += v.Period
	}
	if advance && len(m.Entries) >= compactMin && len(m.Entries) > 2*len(left) {
		l.compact(left)
	}
	var claims []anonbind.Claim
	if l.anon != nil {
		claims = l.anon.Claims()
	}
	return p, claims, Stats{Samples: l.samples, Recent: recent, Lost: l.lost}
}

// compact lets go of the entries of the Builder but those left (by
// index, in order), and of the functions, stacks and threads only the
// others reached: a new Builder holds those left, at counts of 0 (their
// decayed counts go on), and a new Resolver, whose caches name the old
// Builder's ids, resolves into it; at most every renewSymbolsEvery,
// the Symbolizer lets go of the images it read. Once the entries that decayed to
// nothing are more than those left, so that the work is paid for by
// the entries that came and went.
func (l *live) compact(left []int32) {
	m := l.b.Meta()
	keep := make([]profile.Entry, len(left))
	decayed := make([]decayed, len(left))
	for j, i := range left {
		keep[j].Key, decayed[j] = m.Entries[i].Key, l.decayed[i]
	}
	l.b = profile.Retain(m, keep)
	l.decayed, l.seen = decayed, make([]profile.Value, len(left))
	l.res = nil
	if time.Since(l.symAt) >= renewSymbolsEvery {
		l.sym.ForgetImages()
		l.symAt = time.Now()
	}
}

// Stats are a live view's counts.
type Stats struct {
	Samples uint64 // since the start
	Recent  uint64 // since the last refresh
	Lost    uint64
}

// liveProcs is the anonbind.Processes of a live view: the Recorder's
// processes, who each is, and its mappings; FillLive then finds it
// under /proc.
type liveProcs struct{ r *record.Recorder }

func (lp *liveProcs) Process(pid uint32) anon.Process {
	if lp.r == nil {
		return anon.NewProcess(pid, "", nil, nil)
	}
	var known *linux.Identity
	if id, ok := lp.r.Identity(pid); ok {
		known = &id
	}
	sp, _ := lp.r.Tracker().Process(pid)
	return anon.NewProcess(pid, sp.Comm, sp.Mappings, known)
}

// renewAnon makes the JIT handlers' Binder anew when the last is
// renewEvery old, or force, and says whether it did: the samples waiting
// in JIT code can be named. JIT data grows while a view runs (a perf map
// appended to, a jitdump and a jitlog written on, a PyPy log followed),
// and a handler reads it when it claims a process.
func (l *live) renewAnon(force bool) bool {
	if age, ok := l.anon.Age(); ok && !force && age < renewEvery {
		return false
	}
	hs, err := l.jit.Handlers() // checked when top started: no new error
	if err != nil {
		return false
	}
	if l.jit.PyPyLog != "" {
		hs = anon.WithPyPyLog(hs, l.jit.PyPyLog)
	}
	l.anon.Renew(&l.procs, anonbind.Options{Handlers: hs, Force: l.jit.Force})
	return true
}
