package daemon

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"math/bits"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/anonbind"
	"github.com/jitprof/jitprof/internal/delivery"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/otlp"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/perfdata"
)

// Push says where and how the daemon pushes what it samples to an
// OpenTelemetry Collector (OTLP profiles).
type Push struct {
	// Exporter is jitprof-otlp's path (delivery.FindExporter).
	Exporter string
	Delivery delivery.Config
	// Resource is what goes in every process's resource.
	Resource otlp.Options
	// Every is how often what was sampled since the last push is sent
	// (0: DefaultPushEvery); SpoolMax bounds the batches waiting in the
	// session directory (0: DefaultSpoolMax).
	Every    time.Duration
	SpoolMax int64
}

// DefaultPushEvery is how often the daemon pushes: the OpenTelemetry
// eBPF profiler's 5 s halved in requests, a tenth of a minute's delay.
const DefaultPushEvery = 10 * time.Second

// DefaultSpoolMax bounds the batches waiting to be sent: at the bench
// workload's rate, days of a Collector down.
const DefaultSpoolMax = 256 << 20

// SpoolDir is the spool's directory in the session directory: batches
// not yet sent, kept across restarts (delivery.Spool).
const SpoolDir = "otlp-spool"

// maxPushSamples bounds the samples held in memory for the next push
// (some 48 bytes each): at 1 kHz on 64 CPUs, a push of 10 s is 640,000.
// Beyond, as when the last push is still being encoded and written,
// samples are dropped and counted (PushStatus.DroppedSamples): memory
// stays bounded, and sampling never waits for the spool's disk.
const maxPushSamples = 1 << 20

// stopFlushFor bounds how long a stopping daemon tries to send what is
// spooled; what is left waits for its next start.
const stopFlushFor = 5 * time.Second

// renewSymbolsEvery is how often the Symbolizer lets go of the images
// whose symbols it read into memory, as jitprof top's does: a machine
// runs new executables all the time, and a daemon runs for weeks.
const renewSymbolsEvery = time.Minute

// renewBuilderEvery and maxBuilderNodes say when the push starts a new
// Builder and Resolver (the places seen, their functions, frames and
// stacks, and the Resolver's caches of them), so that they do not grow
// with every place the machine ever ran: every half hour at the default
// interval, or at 200,000 stack nodes and threads (some 200 bytes each
// with their frames, functions and the Resolver's caches). A push's
// entries are handed over with it (profile.Builder.TakeEntries), and
// what the Resolver cached of a process goes when it is let go of.
const (
	renewBuilderEvery = 180
	maxBuilderNodes   = 200000
)

// resolveEvery is how often, at most, the samples waiting are resolved
// before a push is due: when a process they need exits (ingest lets go
// of it a round after its exit, and its JIT data may go with it).
// Otherwise they are resolved once a push, just before it, and JIT data
// is read then: each sample in JIT code is named by data read after it
// was taken, by the generation live at its time, never by one a JIT had
// replaced before; and a JIT process's data, which can be hundreds of
// megabytes, is read once an interval, not twice a second as jitprof
// top reads it.
const resolveEvery = 500 * time.Millisecond

// PushStatus is what `jitprof daemon status` says of the push.
type PushStatus struct {
	delivery.Status
	Protocol string        `json:"protocol"`
	Every    time.Duration `json:"every"`
	SpoolMax int64         `json:"spool_max"`
	// Samples have been put in the spool in batches; Waiting are in
	// memory for the next push; DroppedSamples were dropped at the
	// memory bound (maxPushSamples) or could not be spooled.
	Samples        uint64 `json:"samples"`
	Waiting        uint64 `json:"waiting"`
	DroppedSamples uint64 `json:"dropped_samples"`
	// SpoolError is the last batch that could not be encoded or spooled.
	SpoolError string `json:"spool_error,omitempty"`
}

// pusher builds the daemon's pushes. The daemon keeps counts, not
// stacks or times, and its sample files key JIT code by sequence
// number; a push needs each sample with its time and stack. So the
// pusher takes the very samples the round gives internal/ingest, keeps
// them by place with their times until the push is due, and then
// resolves each place once as jitprof top resolves samples
// (internal/resolve against the Recorder's Tracker, which knows the
// mappings at each time; JIT code named by the anon handlers bound to
// the live processes, by time: the generation live when the sample was
// taken, the one the session's sequence number names) into a
// profile.Builder that keeps times. The samples since the last push go
// to a goroutine that encodes them (internal/otlp), compresses them and
// puts them in the spool: each sample goes in one push only, and the
// record loop never waits for encoding, disk or network (the Sender's
// goroutine sends). The rest runs in the record loop, between rounds.
type pusher struct {
	cfg    Push
	sender *delivery.Sender
	sym    *symbolize.Symbolizer
	chains bool
	event  profile.Event

	t   *process.Tracker
	b   *profile.Builder
	res *resolve.Resolver
	// held counts the samples waiting and in b (inBuilder); from and
	// to are the first and last times of those in b.
	held, inBuilder uint64
	from, to        uint64
	period          uint64 // a sample's, when it does not say (0 in frequency mode)
	// pushes are the pushes b made.
	pushes int
	procs  liveProcs
	anon   anonbind.Live
	// waiting are the samples waiting, by process: an exit resolves
	// its process's alone.
	waiting    map[uint32]*waiting
	spare      spares
	times      []uint64  // the times of a place being resolved
	places     places    // the places of a process being resolved
	resolvedAt time.Time // when an exit last had samples resolved
	// resolvedDue says the samples of the push due are resolved.
	resolvedDue bool
	// forget are processes ingest let go of, whose mappings the samples
	// waiting still need: forgotten once those are resolved.
	forget []uint32
	// sampled are the processes with samples since the last push;
	// recent are some of them and their samples waiting.
	sampled map[uint32]struct{}
	recent  recentPIDs
	// gone are the processes forgotten since the last push: what the
	// push says of them.
	gone     map[uint32]profile.Process
	buildIDs map[string]cachedBuildID // by executable path
	// rounds counts endRound's calls: an executable is stat'd once a
	// round (buildID).
	rounds  uint64
	forgetf func(pid uint32)
	cutAt   time.Time
	symAt   time.Time // when sym last let go of the images it read

	out  chan *profile.Profile
	done chan struct{}

	mu sync.Mutex
	st PushStatus
}

// newPusher starts pushing to exp through the spool in the session
// directory root, for the events of attr, the samples of the processes
// t follows, who identity says they are (the Recorder's), and, when
// chains, with their callchains. forget lets go of a process.
func newPusher(root *os.Root, cfg Push, exp delivery.Exporter, attr *perfdata.Attr, chains bool,
	t *process.Tracker, identity func(uint32) (linux.Identity, bool), forget func(uint32)) (*pusher, error) {
	if cfg.Every <= 0 {
		cfg.Every = DefaultPushEvery
	}
	if cfg.SpoolMax <= 0 {
		cfg.SpoolMax = DefaultSpoolMax
	}
	sp, err := delivery.OpenSpoolIn(root, SpoolDir, cfg.SpoolMax)
	if err != nil {
		exp.Close()
		return nil, err
	}
	ev := profile.Event{Name: attr.Name}
	if attr.Freq() {
		ev.Freq = attr.SamplePeriod
	} else {
		ev.Period = attr.SamplePeriod
	}
	p := &pusher{cfg: cfg, chains: chains, event: ev, t: t, period: ev.Period, forgetf: forget,
		procs: liveProcs{t: t, identity: identity}, gone: map[uint32]profile.Process{}, waiting: map[uint32]*waiting{}, sampled: map[uint32]struct{}{}, buildIDs: map[string]cachedBuildID{},
		sym:    symbolize.New(symbolize.Options{SymbolCache: true}),
		sender: delivery.NewSender(sp, exp, cfg.Delivery.Endpoint, delivery.DefaultBackoff),
		out:    make(chan *profile.Profile, 1), done: make(chan struct{}),
		cutAt: time.Now().Add(cfg.Every), symAt: time.Now()}
	p.st.Protocol, p.st.Every, p.st.SpoolMax = cfg.Delivery.Protocol, cfg.Every, cfg.SpoolMax
	p.recent.clear()
	p.fresh()
	go p.spool()
	return p, nil
}

// fresh starts the next push's Builder.
func (p *pusher) fresh() {
	p.b = profile.NewBuilder()
	p.b.KeepTimes()
	p.b.Event(p.event)
	p.res = nil
	p.pushes = 0
	p.from, p.to = ^uint64(0), 0
}

// noPID is no process's pid.
const noPID = ^uint32(0)

// waiting is the samples of one process waiting to be resolved, in the
// order they came; each is resolved with the others of its place, once
// (resolve.Resolver.AddTimes). They are kept in a slice and grouped by
// place when resolved (places), rather than in a map of places as they
// come: a map lookup for every sample, hashing a key of four words in a
// map that keeps growing, cost more than appending the sample and
// grouping the push's samples once.
type waiting struct {
	samples []waitingSample
	words   []uint64 // the samples' callchains
	// jit says some are in JIT code, or called from it: named by JIT
	// data read once they are resolved.
	jit bool
}

// waitingSample is a sample waiting. key is a hash of its place (thread,
// mode, address, mapping and callchain), by which the samples are
// grouped, those of one key whose places differ told apart. The CPU is
// not in the place: an OTLP sample is a stack and thread's, whatever
// their CPU (internal/otlp), and a place of each CPU was as many to
// resolve, keep and encode, on a machine of 64 CPUs up to 64 times as
// many.
type waitingSample struct {
	key, time, ip, period uint64
	// m is the file's mapping ingest found the address in (nil: none,
	// or in the kernel): the place is resolved by its offset in the
	// file (resolve.Sample.Mapping), not looked up again.
	m               *process.Mapping
	tid             uint32
	mode            resolve.Mode
	chain, chainEnd int32 // in waiting.words
}

// add takes one of the round's samples (its callchain the daemon's
// arena's, valid until the end of the round) and the mapping ingest
// found its address in (nil: in the kernel or in none). It is kept with
// its process's, to be resolved at the next resolve; one in JIT code,
// or called from it, says its process's are to be named by JIT data
// read then, after it was taken.
func (p *pusher) add(s *perfdata.Sample, m *process.Mapping) {
	if p.held >= maxPushSamples {
		p.mu.Lock()
		p.st.DroppedSamples++
		p.mu.Unlock()
		return
	}
	p.held++
	rp := p.recent.of(s.PID)
	if rp.pid != s.PID {
		p.sampled[s.PID] = struct{}{}
		*rp = recentPID{pid: s.PID}
	}
	period := s.Period
	if !s.Has(perfdata.SamplePeriod) {
		period = p.period
	}
	mode := resolve.Mode(s.Misc & perfdata.MiscCPUModeMask)
	var chain []uint64
	if p.chains {
		chain = s.Callchain
	}
	w := rp.w
	if w == nil {
		if w = p.waiting[s.PID]; w == nil {
			w = p.spare.get()
			p.waiting[s.PID] = w
		}
		rp.w = w
	}
	if !w.jit && (mode == resolve.ModeUser && m != nil && m.Anon || inJIT(p.t, s.PID, s.Time, mode, chain)) {
		w.jit = true
	}
	h := hashChain(chain)
	h = (h ^ s.IP) * 1099511628211
	h = (h ^ (uint64(s.TID)<<8 | uint64(mode))) * 1099511628211
	if mode != resolve.ModeUser {
		m = nil
	} else if m != nil {
		h = (h ^ uint64(m.ID)) * 1099511628211
	}
	ws := waitingSample{key: h, time: s.Time, ip: s.IP, period: period, m: m, tid: s.TID, mode: mode, chain: int32(len(w.words))}
	w.words = append(w.words, chain...)
	ws.chainEnd = int32(len(w.words))
	w.samples = append(w.samples, ws)
}

// recentPIDs are processes sampled since the last push, by their pid's
// low bits, and their samples waiting (nil until asked for): on a busy
// machine a round's samples come from tens of processes, those of
// several CPUs one after another. Looking a sample's process up in the
// maps of the processes sampled and of their samples waiting, whenever
// it was not the last sample's, was two thirds of keeping a sample
// (add) in BenchmarkPushChurn, whose samples are each of any process.
type recentPIDs [64]recentPID

type recentPID struct {
	pid uint32 // noPID: none
	w   *waiting
}

// of is the slot of pid, which may hold another process.
func (r *recentPIDs) of(pid uint32) *recentPID { return &r[pid%uint32(len(r))] }

// clear empties every slot.
func (r *recentPIDs) clear() {
	for i := range r {
		r[i] = recentPID{pid: noPID}
	}
}

// places groups the samples of a process by place: a table of the
// places met, by key, each the index of its first sample (+1, 0 for
// none), and the samples of each place linked in the order taken. It
// replaced a sort of the samples by key (through one word each, the
// key's high bits and the sample's index), which cost more than a
// probe of the table or two a sample; its arrays are kept for the next
// process.
type places struct {
	table []int32
	// next is the next sample of each sample's place (-1: none), last
	// the last of the place of each first one so far.
	next, last []int32
	firsts     []int32 // each place's first sample, in the order met
}

// group groups the samples of w by place.
func (pl *places) group(w *waiting) {
	ss := w.samples
	size := 1 << bits.Len(uint(2*len(ss))) // more than twice the samples: few collisions
	if cap(pl.table) < size {
		pl.table = make([]int32, size)
	}
	table := pl.table[:size]
	clear(table)
	mask := uint64(size - 1)
	pl.next, pl.last = slices.Grow(pl.next[:0], len(ss))[:len(ss)], slices.Grow(pl.last[:0], len(ss))[:len(ss)]
	pl.firsts = pl.firsts[:0]
	for i := range ss {
		x := &ss[i]
		pl.next[i] = -1
		for h := x.key >> 32 & mask; ; h = (h + 1) & mask {
			f := table[h] - 1
			if f < 0 {
				table[h] = int32(i) + 1
				pl.last[i] = int32(i)
				pl.firsts = append(pl.firsts, int32(i))
				break
			}
			if o := &ss[f]; o.key == x.key && o.ip == x.ip && o.tid == x.tid && o.mode == x.mode && o.m == x.m &&
				slices.Equal(w.words[o.chain:o.chainEnd], w.words[x.chain:x.chainEnd]) {
				pl.next[pl.last[f]] = int32(i)
				pl.last[f] = int32(i)
				break
			}
		}
	}
}

// spares are the processes' slices of samples resolved, kept for the
// samples of the next push: growing them anew every push was a third of
// keeping the samples (add). What is kept is bounded by their room, all
// together (maxSpareSamples, maxSpareWords), and by their number
// (maxSpares): get and put look through them all, once for each process
// that starts and each that exits, and a machine running a build starts
// hundreds a second, most with a sample or two.
type spares struct {
	ws             []*waiting
	samples, words int
}

// Bounds on what spares keeps: a push's samples at 1 kHz on a few CPUs
// (48 bytes each), and a few callchains of each (8 bytes a word).
const (
	maxSpareSamples = 1 << 16
	maxSpareWords   = 1 << 18
	maxSpares       = 64
)

// get returns the spare with the most room: a process that came with
// the last one gone often does what it did (a build's compiler, a test
// run), and growing a slice of a few thousand samples from a small one,
// copying it at each step into memory the kernel must fault in, was half
// of keeping the samples (add) in a daemon at 1 kHz beside processes
// that start every few seconds.
func (sp *spares) get() *waiting {
	n := len(sp.ws)
	if n == 0 {
		return &waiting{}
	}
	big := n - 1
	for i, w := range sp.ws[:n-1] {
		if cap(w.samples) > cap(sp.ws[big].samples) {
			big = i
		}
	}
	w := sp.ws[big]
	sp.ws[big] = sp.ws[n-1]
	sp.ws = sp.ws[:n-1]
	sp.samples -= cap(w.samples)
	sp.words -= cap(w.words)
	return w
}

// put keeps w, resolved, for another process, as far as the bounds
// allow; past maxSpares, in place of the spare with the least room, if w
// has more.
func (sp *spares) put(w *waiting) {
	if len(sp.ws) >= maxSpares {
		small := 0
		for i, o := range sp.ws {
			if cap(o.samples) < cap(sp.ws[small].samples) {
				small = i
			}
		}
		o := sp.ws[small]
		if cap(o.samples) >= cap(w.samples) {
			return
		}
		sp.ws[small] = sp.ws[len(sp.ws)-1]
		sp.ws = sp.ws[:len(sp.ws)-1]
		sp.samples -= cap(o.samples)
		sp.words -= cap(o.words)
	}
	if sp.samples+cap(w.samples) > maxSpareSamples || sp.words+cap(w.words) > maxSpareWords {
		return
	}
	w.samples, w.words, w.jit = w.samples[:0], w.words[:0], false
	sp.ws = append(sp.ws, w)
	sp.samples += cap(w.samples)
	sp.words += cap(w.words)
}

// hashChain is FNV-1a over a callchain's words.
func hashChain(chain []uint64) uint64 {
	h := uint64(14695981039346656037)
	for _, w := range chain {
		h = (h ^ w) * 1099511628211
	}
	return h
}

func (p *pusher) resolver() *resolve.Resolver {
	if p.res == nil {
		p.res = resolve.New(p.b, p.t, resolve.Options{Symbolizer: p.sym, Anon: &p.anon, LeafOnly: !p.chains, SparseMappings: true})
	}
	return p.res
}

// inJIT reports whether a sample of process pid at time tm (mode) was
// called from anonymous memory, by its callchain: JIT code, to be named
// by JIT data read after it. Where the sample itself ran is ingest's
// mapping (add): a lookup for every sample was a tenth of add.
func inJIT(t *process.Tracker, pid uint32, tm uint64, mode resolve.Mode, chain []uint64) bool {
	isAnon := func(ip uint64) bool {
		m := t.Lookup(pid, ip, tm, false)
		return m != nil && m.Anon
	}
	user := mode == resolve.ModeUser
	for _, ip := range chain {
		if ip >= resolve.ContextMax {
			user = ip == resolve.ContextUser
			continue
		}
		if user && isAnon(ip) {
			return true
		}
	}
	return false
}

// forgetPID lets go of process pid, and of what the Resolver cached of
// it.
func (p *pusher) forgetPID(pid uint32) {
	p.forgetf(pid)
	if p.res != nil {
		p.res.Forget(pid)
	}
}

// forgetLater is ingest's Forget: a process ingest let go of is
// forgotten once its samples are resolved.
func (p *pusher) forgetLater(pid uint32) { p.forget = append(p.forget, pid) }

// endRound resolves the samples waiting when a push is due, or when a
// process they need is to be let go of, at most every resolveEvery;
// lets go of the processes that waited for it; and hands the Builder on
// every Push.Every.
func (p *pusher) endRound() {
	p.rounds++
	now := time.Now()
	due := !now.Before(p.cutAt)
	// A process without samples since the last push is let go of at
	// once: on a busy machine most of those that exit.
	keep := p.forget[:0]
	for _, pid := range p.forget {
		if _, ok := p.sampled[pid]; ok {
			keep = append(keep, pid)
		} else {
			p.forgetPID(pid)
		}
	}
	p.forget = keep
	// Everything once a push (not again while the spooling goroutine is
	// behind and the push waits); when processes are let go of before,
	// only their samples, at most every resolveEvery: on a busy machine
	// processes exit all the time, and the Resolver forgets what it
	// resolved whenever the Tracker changes.
	resolved := false
	switch {
	case due && !p.resolvedDue:
		p.resolve(nil)
		p.resolvedDue, resolved = true, true
	case len(p.forget) > 0 && now.Sub(p.resolvedAt) >= resolveEvery:
		only := map[uint32]bool{}
		for _, pid := range p.forget {
			only[pid] = true
		}
		p.resolve(only)
		p.resolvedAt, resolved = now, true
	}
	if resolved {
		// All asked of the Tracker before any is forgotten: each
		// Forget is a change the next question would settle.
		for _, pid := range p.forget {
			p.gone[pid] = p.process(pid)
		}
		for _, pid := range p.forget {
			p.forgetPID(pid)
		}
		p.forget = p.forget[:0]
	}
	if due && p.cut(false) {
		p.cutAt = now.Add(p.cfg.Every)
		p.resolvedDue = false
	}
	p.mu.Lock()
	p.st.Waiting = p.held
	p.mu.Unlock()
}

// resolve resolves the samples waiting into the Builder, of every
// process or those of only: each place once for the samples of each
// span of time in which it resolves one way (resolve.Resolver.AddTimes:
// in JIT code, the span in which the code named was there), with anon
// handlers made anew first when some are in JIT code.
func (p *pusher) resolve(only map[uint32]bool) {
	res := p.resolver()
	jit := false
	for pid, w := range p.waiting {
		if w.jit && (only == nil || only[pid]) {
			jit = true
			break
		}
	}
	if jit {
		p.renewAnon()
	}
	if only == nil {
		for pid, w := range p.waiting {
			p.resolvePlaces(res, pid, w, true)
		}
	} else {
		for pid := range only {
			if w, ok := p.waiting[pid]; ok {
				p.resolvePlaces(res, pid, w, false)
			}
		}
	}
}

// resolvePlaces resolves the samples of process pid waiting, w, into
// the Builder, each place once for the samples of each span of time in
// which it resolves one way (resolve.Resolver.AddTimes). w is kept for
// the process's next samples when keep and it had some: grown to what
// the process is sampled in an interval, it grows no more; else it goes
// to the spares.
func (p *pusher) resolvePlaces(res *resolve.Resolver, pid uint32, w *waiting, keep bool) {
	ss := w.samples
	pl := &p.places
	pl.group(w)
	const cpu = -1 // as waitingSample's
	for _, f := range pl.firsts {
		first := &ss[f]
		chain := w.words[first.chain:first.chainEnd]
		ts, period := p.times[:0], uint64(0)
		for i := f; i >= 0; i = pl.next[i] {
			ts = append(ts, ss[i].time)
			period += ss[i].period
		}
		// In the order taken: out of order only across CPUs' rings.
		if !slices.IsSorted(ts) {
			slices.Sort(ts)
		}
		s := resolve.Sample{PID: pid, TID: first.tid, CPU: cpu, Mode: first.mode, IP: first.ip, Period: period, Mapping: first.m}
		if len(chain) > 0 {
			s.Callchain = chain
		}
		res.AddTimes(&s, ts)
		p.inBuilder += uint64(len(ts))
		p.from, p.to = min(p.from, ts[0]), max(p.to, ts[len(ts)-1])
		p.times = ts
	}
	clear(ss) // their mappings, which the Tracker may let go of
	if keep && len(ss) > 0 {
		w.samples, w.words, w.jit = ss[:0], w.words[:0], false
		return
	}
	delete(p.waiting, pid)
	p.spare.put(w)
	if rp := p.recent.of(pid); rp.pid == pid {
		rp.w = nil
	}
}

// cut hands the samples resolved since the last push to the spooling
// goroutine: a profile of the Builder's entries and their times, which
// the Builder hands over (profile.Builder.TakeEntries), and of its
// tables (those it only appends to shared, the images, whose notes it
// sets, copied); when the goroutine is still busy with the last push,
// it keeps them for a later round unless wait. The Builder and its
// Resolver live on, so that places already resolved cost a cache
// lookup, until renewBuilderEvery pushes or maxBuilderEntries.
func (p *pusher) cut(wait bool) bool {
	n := p.inBuilder
	if n == 0 {
		return true
	}
	m := p.b.Meta()
	prof := &profile.Profile{Events: slices.Clone(m.Events), Images: slices.Clone(m.Images), Funcs: m.Funcs,
		Frames: m.Frames, Nodes: m.Nodes, Threads: m.Threads, Strings: m.Strings, Entries: m.Entries}
	pids := map[uint32]bool{}
	lastPID := noPID
	for _, e := range m.Entries {
		pid := m.Threads[e.Thread].PID
		if pid == lastPID {
			continue
		}
		lastPID = pid
		if pids[pid] {
			continue
		}
		pids[pid] = true
		pr, ok := p.gone[pid]
		if !ok {
			pr = p.process(pid)
		}
		prof.Processes = append(prof.Processes, pr)
	}
	prof.StartNS, prof.EndNS = p.from, p.to
	// Sample times are CLOCK_MONOTONIC (record.Config's clock), tied to
	// the wall clock here.
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	prof.WallNS, prof.ClockNS = uint64(time.Now().UnixNano()), uint64(ts.Nano())
	if wait {
		p.out <- prof
	} else {
		select {
		case p.out <- prof:
		default:
			return false
		}
	}
	p.held -= n
	p.inBuilder = 0
	p.from, p.to = ^uint64(0), 0
	clear(p.gone)
	// The processes of the samples still waiting (for a resolve
	// resolveEvery did not allow yet) stay sampled.
	clear(p.sampled)
	p.recent.clear()
	for pid, w := range p.waiting {
		if len(w.samples) > 0 {
			p.sampled[pid] = struct{}{}
		}
	}
	p.b.TakeEntries() // the push's now
	p.pushes++
	if p.pushes >= renewBuilderEvery || len(m.Nodes)+len(m.Threads) >= maxBuilderNodes {
		p.fresh()
		if time.Since(p.symAt) >= renewSymbolsEvery {
			p.sym.ForgetImages()
			p.symAt = time.Now()
		}
	}
	return true
}

// process is what the push says of process pid: its executable and the
// executable's build-id.
func (p *pusher) process(pid uint32) profile.Process {
	pr := profile.Process{PID: pid}
	if m := p.t.Executable(pid); m != nil {
		pr.Exe, pr.BuildID = m.Path, m.BuildID
		if pr.BuildID == "" {
			pr.BuildID = p.buildID(m.Path)
		}
	}
	return pr
}

// exeFile is an executable file as stat says it is: its build-id is
// read again when it changes.
type exeFile struct {
	dev, ino uint64
	size     int64
	mtime    unix.Timespec
}

// maxBuildIDs bounds the build-ids the push keeps.
const maxBuildIDs = 4096

// buildID is the build-id of the executable at path, "" when it has none
// or cannot be read. The daemon reads no build-ids as it records
// (record.Config.NoBuildIDs); the push reads an executable's notes once,
// and again only when the file changes: a stat a round per executable,
// not one for each of its processes (a build runs the same compiler
// hundreds of times a minute). Any answer may be a file changed since
// the process ran; one of the same round is as late as the exit that
// asks.
func (p *pusher) buildID(path string) string {
	if c, ok := p.buildIDs[path]; ok && c.round == p.rounds {
		return c.id
	}
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return ""
	}
	f := exeFile{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim}
	if c, ok := p.buildIDs[path]; ok && c.file == f {
		c.round = p.rounds
		p.buildIDs[path] = c
		return c.id
	}
	id, _ := symbolize.FileBuildID(path, trust.Unknown)
	if len(p.buildIDs) >= maxBuildIDs {
		clear(p.buildIDs)
	}
	p.buildIDs[path] = cachedBuildID{f, id, p.rounds}
	return id
}

type cachedBuildID struct {
	file  exeFile
	id    string
	round uint64 // when file was last stat'd
}

// spool encodes the pushes, compresses them and puts them in the spool,
// in a goroutine of its own: the record loop does not wait for the disk.
func (p *pusher) spool() {
	defer close(p.done)
	// One buffer and compressor for every push: a compressor's state is
	// a megabyte, and the garbage collector's work shows in a daemon's
	// CPU time.
	var z bytes.Buffer
	// klauspost/compress's, not the standard library's: on a push of
	// BenchmarkPushChurn's 19M instructions against 32M at the fastest
	// level (BestSpeed). And its level 2, not 1: on three pushes of a
	// daemon at 1 kHz on 2 CPUs beside bench/daemon/push.sh's workload
	// (174 KB, 174 KB and 93 KB before gzip, a third of it the samples'
	// times, which do not compress), 0.90, 0.86 and 0.44 ms against 1.17,
	// 1.12 and 0.58, and 97.8, 97.0 and 50.5 KB against 116.6, 115.0 and
	// 62.7 KB; level 3 took 1.25 ms for 91 KB on the first. (The Huffman
	// coding alone took 0.37 ms there, for 135 KB.)
	zw, _ := gzip.NewWriterLevel(&z, 2)
	var req []byte // the request, encoded into one buffer every push
	for prof := range p.out {
		var n uint64
		for _, e := range prof.Entries {
			n += e.Count
		}
		// Unsorted: the push's entries are of one stack and thread
		// each (no CPU), which the encoder then needs not group.
		var err error
		req, err = otlp.Append(req[:0], prof, p.cfg.Resource)
		if err == nil {
			z.Reset()
			zw.Reset(&z)
			zw.Write(req)
			if err = zw.Close(); err == nil {
				err = p.sender.Submit(z.Bytes())
			}
		}
		p.mu.Lock()
		if err != nil {
			p.st.DroppedSamples += n
			p.st.SpoolError = err.Error()
		} else {
			p.st.Samples += n
		}
		p.mu.Unlock()
		if err != nil {
			log.Printf("otlp push: %v", err)
		}
	}
}

// status returns what the push has done.
func (p *pusher) status() PushStatus {
	p.mu.Lock()
	st := p.st
	p.mu.Unlock()
	st.Status = p.sender.Status()
	return st
}

// close pushes what is left, once the recording has ended: the samples
// waiting for JIT data are named, the last Builder spooled, and the
// spool sent for stopFlushFor at most; what is not sent waits in the
// spool for the next start.
func (p *pusher) close() error {
	p.resolve(nil)
	p.cut(true)
	close(p.out)
	<-p.done
	p.anon.Close()
	ctx, cancel := context.WithTimeout(context.Background(), stopFlushFor)
	defer cancel()
	if err := p.sender.Flush(ctx); err != nil {
		log.Printf("%v: they wait in %s for the next start", err, SpoolDir)
	}
	if err := p.sender.Close(); err != nil {
		return fmt.Errorf("otlp push: %w", err)
	}
	return nil
}

// liveProcs is the anonbind.Processes of the daemon: the Recorder's
// processes, who each is, and its mappings.
type liveProcs struct {
	t        *process.Tracker
	identity func(uint32) (linux.Identity, bool)
	// pypyDump, when set, is the session's numbered dump of a PyPy
	// process's log (ingest.Ingest.PyPyDump).
	pypyDump func(pid uint32) ([]byte, string, error)
}

// Process is pid as the handlers see it. A PyPy's log is not read by
// the push: it holds no sequence numbers, its stamps are PyPy's TSC,
// and most of it can be the garbage collector's sections. Its loops
// and bridges are named by the dump ingest writes of it as it grows
// (anon.PyPySeq), by time: each at its section's time, so a sample is
// named by the loop live when it was taken, with the very name a report
// of the session gives it. The dump outlives the process, whose samples
// are resolved after ingest let go of it.
func (lp *liveProcs) Process(pid uint32) anon.Process {
	var known *linux.Identity
	if id, ok := lp.identity(pid); ok {
		known = &id
	}
	sp, _ := lp.t.Process(pid)
	p := anon.NewProcess(pid, sp.Comm, sp.Mappings, known)
	// Only a PyPy has a dump of its log (ingest follows a log as the
	// pypy handler claims: IsPyPy), and no other process is looked for.
	if lp.pypyDump != nil && p.IsPyPy() {
		if b, path, err := lp.pypyDump(pid); err == nil {
			p.Embedded = map[string][]byte{path: b}
			p.Kinds = map[string]string{path: anon.PyPySeq}
		}
	}
	return p
}

// renewAnon makes the JIT handlers' Binder anew, with the built-in
// handlers, for the samples in JIT code waiting (resolveEvery): a
// handler reads a process's JIT data when it claims it, and the data
// grows while the daemon runs.
func (p *pusher) renewAnon() {
	hs, _ := anon.Select(nil) // the built-in handlers: no error
	p.anon.Renew(&p.procs, anonbind.Options{Handlers: hs})
}
