package daemon

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"log"
	"os"
	"slices"
	"sync"
	"time"

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

// maxPushSamples bounds the samples held in memory for one push: at
// 1 kHz on 64 CPUs, a push of 10 s. Beyond, when the last push's batch
// is still being encoded and written, the samples are dropped and
// counted (PushStatus.DroppedSamples): memory stays bounded, and
// sampling never waits for the spool's disk.
const maxPushSamples = 1 << 20

// stopFlushFor bounds how long a stopping daemon tries to send what is
// spooled; what is left waits for its next start.
const stopFlushFor = 5 * time.Second

// renewSymbolsEvery is how often the Symbolizer lets go of the images
// whose symbols it read into memory, as jitprof top's does: a machine
// runs new executables all the time, and a daemon runs for weeks.
const renewSymbolsEvery = time.Minute

// renewJITEvery is how often, at most, JIT data is read again for the
// samples in JIT code of a process that exited (ingest lets go of it a
// round after its exit, and its JIT data may go with it). Otherwise it
// is read once a push, just before it: each sample in JIT code is named
// by data read after it was taken, by the generation live at its time,
// never by one a JIT had replaced before; and a JIT process's data, which
// can be hundreds of megabytes, is read once an interval, not twice a
// second as jitprof top reads it.
const renewJITEvery = 500 * time.Millisecond

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
// pusher takes the very samples the round gives internal/ingest and
// resolves them as jitprof top does (internal/resolve against the
// Recorder's Tracker, JIT code named by the anon handlers bound to the
// live processes, by time: the generation live when the sample was
// taken, the one the session's sequence number names) into a
// profile.Builder that keeps times. Every Push.Every the Builder is
// handed to a goroutine that encodes it (internal/otlp), compresses it
// and puts it in the spool, and a new Builder starts: each sample goes
// in one push only, and the record loop never waits for encoding, disk
// or network (the Sender's goroutine sends). All but the goroutine's
// work runs in the record loop, between rounds.
type pusher struct {
	cfg    Push
	sender *delivery.Sender
	sym    *symbolize.Symbolizer
	chains bool
	event  profile.Event

	t          *process.Tracker
	b          *profile.Builder
	res        *resolve.Resolver
	held       uint64 // samples in b and jitPending
	period     uint64 // a sample's, when it does not say
	procs      liveProcs
	anon       liveAnon
	jitPending []resolve.Sample
	// forget are processes ingest let go of, whose mappings the samples
	// of jitPending still need: forgotten once those are resolved.
	forget []uint32
	// gone are the processes forgotten since the last push: what the
	// push says of them.
	gone    map[uint32]profile.Process
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
	p := &pusher{cfg: cfg, chains: chains, event: ev, t: t, period: attr.SamplePeriod, forgetf: forget,
		procs: liveProcs{t: t, identity: identity}, gone: map[uint32]profile.Process{},
		sym:    symbolize.New(symbolize.Options{SymbolCache: true}),
		sender: delivery.NewSender(sp, exp, cfg.Delivery.Endpoint, delivery.DefaultBackoff),
		out:    make(chan *profile.Profile, 1), done: make(chan struct{}),
		cutAt: time.Now().Add(cfg.Every), symAt: time.Now()}
	p.st.Protocol, p.st.Every, p.st.SpoolMax = cfg.Delivery.Protocol, cfg.Every, cfg.SpoolMax
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
}

// add takes one of the round's samples (its callchain the daemon's
// arena's, valid until the end of the round).
func (p *pusher) add(s *perfdata.Sample) {
	if p.held >= maxPushSamples {
		p.mu.Lock()
		p.st.DroppedSamples++
		p.mu.Unlock()
		return
	}
	p.held++
	cpu := int32(-1)
	if s.Has(perfdata.SampleCPU) {
		cpu = int32(s.CPU)
	}
	rs := resolve.Sample{PID: s.PID, TID: s.TID, Time: s.Time, CPU: cpu,
		Mode: resolve.Mode(s.Misc & perfdata.MiscCPUModeMask), IP: s.IP, Count: 1, Period: s.Period}
	if !s.Has(perfdata.SamplePeriod) {
		rs.Period = p.period
	}
	if p.chains {
		rs.Callchain = s.Callchain
	}
	if inJIT(p.t, &rs) {
		rs.Callchain = slices.Clone(rs.Callchain)
		p.jitPending = append(p.jitPending, rs)
		return
	}
	p.resolver().Add(&rs)
}

func (p *pusher) resolver() *resolve.Resolver {
	if p.res == nil {
		p.res = resolve.New(p.b, p.t, resolve.Options{Symbolizer: p.sym, Anon: &p.anon, LeafOnly: !p.chains, SparseMappings: true})
	}
	return p.res
}

// inJIT reports whether s ran in anonymous memory, or, with a
// callchain, was called from there: JIT code, to be named by JIT data
// read after s.
func inJIT(t *process.Tracker, s *resolve.Sample) bool {
	isAnon := func(ip uint64) bool {
		m := t.Lookup(s.PID, ip, s.Time, false)
		return m != nil && m.Anon
	}
	if s.Mode == resolve.ModeUser && isAnon(s.IP) {
		return true
	}
	user := s.Mode == resolve.ModeUser
	for _, ip := range s.Callchain {
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

// forgetLater is ingest's Forget: a process ingest let go of is
// forgotten once no sample of it waits for its JIT data.
func (p *pusher) forgetLater(pid uint32) { p.forget = append(p.forget, pid) }

// endRound names the samples in JIT code once JIT data was read after
// them, lets go of the processes that were waiting for that, and hands
// the Builder on every Push.Every.
func (p *pusher) endRound() {
	now := time.Now()
	due := !now.Before(p.cutAt)
	// At most every renewJITEvery: also while the spooling goroutine is
	// behind and the push waits.
	p.nameJIT((due || len(p.forget) > 0) && now.Sub(p.anon.last) >= renewJITEvery)
	if len(p.jitPending) == 0 {
		for _, pid := range p.forget {
			p.gone[pid] = p.process(pid)
			p.forgetf(pid)
		}
		p.forget = p.forget[:0]
	}
	if due && p.cut(false) {
		p.cutAt = now.Add(p.cfg.Every)
	}
	p.mu.Lock()
	p.st.Waiting = p.held
	p.mu.Unlock()
}

// nameJIT resolves the samples waiting in JIT code with handlers made
// anew, when now.
func (p *pusher) nameJIT(now bool) {
	if len(p.jitPending) == 0 || !now || !p.anon.renew(&p.procs) {
		return
	}
	res := p.resolver()
	for i := range p.jitPending {
		res.Add(&p.jitPending[i])
	}
	clear(p.jitPending) // their callchains
	p.jitPending = p.jitPending[:0]
}

// cut hands the Builder's samples (those resolved: samples waiting for
// JIT data go in the next push) to the spooling goroutine and starts a
// new Builder; when the goroutine is still busy with the last push, it
// keeps them for a later round unless wait.
func (p *pusher) cut(wait bool) bool {
	n := p.held - uint64(len(p.jitPending))
	if n == 0 {
		return true
	}
	prof := p.b.Meta()
	pids := map[uint32]bool{}
	for _, th := range prof.Threads {
		if pids[th.PID] {
			continue
		}
		pids[th.PID] = true
		pr, ok := p.gone[th.PID]
		if !ok {
			pr = p.process(th.PID)
		}
		prof.Processes = append(prof.Processes, pr)
	}
	prof.StartNS, prof.EndNS = ^uint64(0), 0
	for _, ts := range prof.Times {
		for _, tm := range ts {
			prof.StartNS, prof.EndNS = min(prof.StartNS, tm), max(prof.EndNS, tm)
		}
	}
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
			prof.Processes = nil
			return false
		}
	}
	p.held -= n
	clear(p.gone)
	p.fresh()
	if time.Since(p.symAt) >= renewSymbolsEvery {
		p.sym.ForgetImages()
		p.symAt = time.Now()
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
			// The daemon reads no build-ids as it records
			// (record.Config.NoBuildIDs); the Symbolizer has mostly
			// read the executable already.
			if im, err := p.sym.Open(m.Path, ""); err == nil {
				pr.BuildID = im.BuildID()
			}
		}
	}
	return pr
}

// spool encodes the pushes, compresses them and puts them in the spool,
// in a goroutine of its own: the record loop does not wait for the disk.
func (p *pusher) spool() {
	defer close(p.done)
	for prof := range p.out {
		var n uint64
		for _, e := range prof.Entries {
			n += e.Count
		}
		prof.SortEntries()
		req, err := otlp.Encode(prof, p.cfg.Resource)
		if err == nil {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
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
	p.nameJIT(true)
	p.cut(true)
	close(p.out)
	<-p.done
	if p.anon.b != nil {
		p.anon.b.Close()
	}
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
}

func (lp *liveProcs) Process(pid uint32) anon.Process {
	var known *linux.Identity
	if id, ok := lp.identity(pid); ok {
		known = &id
	}
	sp, _ := lp.t.Process(pid)
	return anon.NewProcess(pid, sp.Comm, sp.Mappings, known)
}

// liveAnon names JIT code with a Binder it makes anew, with fresh
// handlers, for the samples in JIT code waiting (renewJITEvery): a
// handler reads a process's JIT data when it claims it, and the data
// grows while the daemon runs.
type liveAnon struct {
	b    *anonbind.Binder
	last time.Time
}

func (a *liveAnon) Resolve(pid uint32, addr, time uint64) (resolve.AnonFrame, bool) {
	if a.b == nil {
		return resolve.AnonFrame{}, false
	}
	return a.b.Resolve(pid, addr, time)
}

// renew makes a new Binder, and says whether it did.
func (a *liveAnon) renew(procs *liveProcs) bool {
	hs, err := anon.Select(nil) // the built-in handlers: no error
	if err != nil {
		return false
	}
	if a.b != nil {
		a.b.Close()
	}
	a.b = anonbind.New(procs, anonbind.Options{Handlers: hs})
	a.last = time.Now()
	return true
}
