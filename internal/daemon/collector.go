package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/perfevent"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/record"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/perfdata"
)

// Config says what the daemon samples and where it keeps the session.
type Config struct {
	Dir string // the session directory
	// Sample is what to sample, as jitprof record takes it: the event,
	// Freq (0 with no Period: DefaultFreq), MaxFreq or Period, Callchain
	// (-g: arcs into {cg} files), the target (SystemWide, PIDs, TIDs,
	// CPUs) and Pages. Its Command and the fields about a file are not
	// used.
	Sample   record.Config
	Separate sampledb.Separate
	// FlushEvery is how often counts reach the files; 0 is
	// DefaultFlushEvery.
	FlushEvery time.Duration
	// MaxJITData and MaxJITDataPerProcess bound the JIT data copied into
	// the session, MaxSampleFiles and MaxSampleData its sample files (0:
	// the defaults, DefaultMaxJITData and so on).
	MaxJITData, MaxJITDataPerProcess int64
	MaxSampleFiles                   int
	MaxSampleData                    int64
}

// DefaultFreq is the daemon's sampling frequency: OProfile's default
// rate was about 2,000 interrupts a second per CPU; perf's 4,000 costs
// more for a profile that runs for weeks.
const DefaultFreq = 1000

// DefaultFlushEvery is how often counts reach the files: what a daemon
// killed with SIGKILL loses at most.
const DefaultFlushEvery = 3 * time.Second

// pollEvery bounds how late the daemon answers a request or a signal.
const pollEvery = 100 * time.Millisecond

// Status is what `jitprof daemon status` shows.
type Status struct {
	PID      int       `json:"pid"`
	Dir      string    `json:"dir"`
	Start    time.Time `json:"start"`
	Target   string    `json:"target"`
	Events   []string  `json:"events"`
	Separate string    `json:"separate"`
	Samples  uint64    `json:"samples"`
	// Counts are what the sample files count: the samples and, with a
	// call graph, the arcs of their callchains; Flushed those in the
	// files, Dropped those that never will be.
	Counts       uint64 `json:"counts"`
	Flushed      uint64 `json:"flushed"`
	Lost         uint64 `json:"lost"`
	Dropped      uint64 `json:"dropped"`
	Unresolved   uint64 `json:"unresolved"`
	Files        int    `json:"files"`
	OpenFiles    int    `json:"open_files"`
	JITProcesses int    `json:"jit_processes"`
	// The session's bounds (Config), what it holds against them, and
	// the samples refused at the sample files' bounds (counted in
	// Dropped too) and processes whose JIT data met a bound.
	SampleFiles          int              `json:"sample_files"`
	SampleData           int64            `json:"sample_data"`
	MaxSampleFiles       int              `json:"max_sample_files"`
	MaxSampleData        int64            `json:"max_sample_data"`
	Refused              uint64           `json:"refused"`
	JITData              int64            `json:"jit_data"`
	MaxJITData           int64            `json:"max_jit_data"`
	MaxJITDataPerProcess int64            `json:"max_jit_data_per_process"`
	JITBounded           int              `json:"jit_bounded"`
	LastFlush            time.Time        `json:"last_flush,omitzero"`
	FlushError           string           `json:"flush_error,omitempty"`
	DiskFull             bool             `json:"disk_full"`
	JITErrors            []string         `json:"jit_errors,omitempty"`
	CallGraph            bool             `json:"call_graph"`
	SessionEvents        []sampledb.Event `json:"session_events"`
}

// daemon is the running collector: the events, the database, and the
// loop that owns both.
type daemon struct {
	cfg    Config
	db     *sampledb.DB
	set    *perfevent.EventSet
	dec    *perfdata.Decoder
	procs  *process.Tracker
	in     *Ingest
	start  time.Time
	lost   uint64
	reqs   chan request
	status Status

	pending []pendingSample
	chains  []uint64 // the round's callchains, one arena
	lastErr error
}

type pendingSample struct {
	s          perfdata.Sample
	chain, end int // the callchain in daemon.chains
}

// Run runs the daemon until ctx is done or a client asks it to stop:
// it opens the session directory (ErrLocked if a daemon has it), the
// events, the control socket and the pid file, calls ready once it
// samples, and then counts samples into the session, flushing every
// cfg.FlushEvery, on dump and at the end.
func Run(ctx context.Context, cfg Config, ready func()) (err error) {
	if cfg.FlushEvery <= 0 {
		cfg.FlushEvery = DefaultFlushEvery
	}
	sc := &cfg.Sample
	if sc.MaxFreq {
		rate, err := linux.MaxSampleRate()
		if err != nil {
			return fmt.Errorf("the most frequent sampling the kernel allows: %w", err)
		}
		sc.Freq = uint64(rate)
	}
	if sc.Freq == 0 && sc.Period == 0 {
		sc.Freq = DefaultFreq
	}
	ev, err := perfevent.ParseEvent(sc.Event)
	if err != nil {
		return err
	}
	name := ev.Name
	if name == "" {
		name = perfevent.DefaultEvent
	}
	sev := sampledb.Event{Name: name, Count: sc.Period}
	if sc.Period == 0 {
		sev.Count, sev.Freq = sc.Freq, true
	}
	cfg.MaxJITData = cmp.Or(cfg.MaxJITData, DefaultMaxJITData)
	cfg.MaxJITDataPerProcess = cmp.Or(cfg.MaxJITDataPerProcess, DefaultMaxJITDataPerProcess)
	cfg.MaxSampleFiles = cmp.Or(cfg.MaxSampleFiles, DefaultMaxSampleFiles)
	cfg.MaxSampleData = cmp.Or(cfg.MaxSampleData, DefaultMaxSampleData)
	db, err := sampledb.Create(cfg.Dir, sampledb.Options{Separate: cfg.Separate, Events: []sampledb.Event{sev},
		MaxFiles: cfg.MaxSampleFiles, MaxBytes: cfg.MaxSampleData})
	if err != nil {
		return err
	}
	d := &daemon{cfg: cfg, db: db, procs: process.New(), start: time.Now(), reqs: make(chan request)}
	pidFile := false
	var pidRoot *os.Root
	defer func() {
		if cerr := d.close(); err == nil {
			err = cerr
		}
		// Last: stop waits for the pid file to go.
		if pidFile {
			pidRoot.Remove(PIDFile)
			pidRoot.Close()
		}
	}()
	opts := perfevent.Options{Event: ev, Freq: sc.Freq, Period: sc.Period, Callchain: sc.Callchain, Pages: sc.Pages}
	target := perfevent.Target{SystemWide: sc.SystemWide, PIDs: sc.PIDs, TIDs: sc.TIDs, CPUs: sc.CPUs}
	d.set, err = perfevent.OpenEvents(opts, target)
	if errors.Is(err, perfevent.ErrPermission) && !sc.SystemWide && !ev.ExcludeKernel {
		// perf_event_paranoid 2: user space only, as perf record does.
		opts.ExcludeKernel = true
		d.set, err = perfevent.OpenEvents(opts, target)
		if err == nil {
			log.Printf("perf_event_paranoid forbids kernel samples: sampling user space only")
		}
	}
	if err != nil {
		return err
	}
	a := d.set.Attr()
	attr := &perfdata.Attr{Type: a.Type, Size: a.Size, Config: a.Config, SamplePeriod: a.Sample,
		SampleType: perfdata.SampleFormat(a.Sample_type), ReadFormat: perfdata.ReadFormat(a.Read_format),
		Flags: perfdata.AttrFlags(a.Bits), ClockID: a.Clockid, Name: name}
	for _, e := range d.set.Events() {
		attr.IDs = append(attr.IDs, e.ID)
	}
	d.dec = perfdata.NewDecoder([]*perfdata.Attr{attr})
	d.in = NewIngest(db, d.procs, 0)
	d.in.CallGraph = sc.Callchain
	d.in.MaxJITData, d.in.MaxJITDataPerProcess = cfg.MaxJITData, cfg.MaxJITDataPerProcess
	d.status = Status{PID: os.Getpid(), Dir: cfg.Dir, Start: d.start, Events: []string{name}, Separate: cfg.Separate.String(), CallGraph: sc.Callchain,
		MaxSampleFiles: cfg.MaxSampleFiles, MaxSampleData: cfg.MaxSampleData, MaxJITData: cfg.MaxJITData, MaxJITDataPerProcess: cfg.MaxJITDataPerProcess}
	switch {
	case len(sc.PIDs) > 0:
		d.status.Target = fmt.Sprint("processes ", sc.PIDs)
	case len(sc.TIDs) > 0:
		d.status.Target = fmt.Sprint("threads ", sc.TIDs)
	case len(sc.CPUs) > 0:
		d.status.Target = fmt.Sprint("CPUs ", sc.CPUs)
	default:
		d.status.Target = "all CPUs"
	}
	// Enabling before reading /proc means a mapping made meanwhile is
	// seen twice rather than missed.
	if err := d.set.Enable(); err != nil {
		return err
	}
	d.synthesize()
	ln, err := listen(db.Root(), cfg.Dir)
	if err != nil {
		return err
	}
	defer ln.Close()
	go serve(ln, d.reqs)
	// The pid file is removed after the DB, which closes its Root, is
	// closed: a Root of its own.
	if pidRoot, err = db.Root().OpenRoot("."); err != nil {
		return err
	}
	if err := writePIDFile(pidRoot); err != nil {
		pidRoot.Close()
		return err
	}
	pidFile = true
	if ready != nil {
		ready()
	}
	return d.loop(ctx)
}

func (d *daemon) loop(ctx context.Context) error {
	flush := time.NewTicker(d.cfg.FlushEvery)
	defer flush.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-flush.C:
			d.flush()
		case r := <-d.reqs:
			if stop := d.handle(r); stop {
				return nil
			}
		default:
		}
		done, err := d.set.Poll(pollEvery)
		if err != nil {
			return err
		}
		d.drain()
		if done {
			log.Printf("every target process exited")
			return nil
		}
	}
}

// synthesize tells the tracker of the processes that ran before the
// daemon, from /proc.
func (d *daemon) synthesize() {
	pids := append(d.cfg.Sample.PIDs, d.cfg.Sample.TIDs...) // /proc/TID reads as the thread's process
	if d.cfg.Sample.SystemWide {
		pids, _ = linux.Host.PIDs()
	}
	for _, pid := range pids {
		p, err := linux.Host.Process(pid)
		if err != nil {
			continue
		}
		up := uint32(p.PID)
		for _, t := range p.Threads {
			d.procs.SetComm(up, uint32(t.TID), 0, t.Comm, false)
		}
		for _, m := range p.Maps {
			if m.Prot&unix.PROT_EXEC == 0 {
				continue
			}
			anon := perfdata.IsAnon(m.Path, m.Flags)
			pgoff := m.Pgoff
			if anon {
				pgoff = 0
			}
			d.procs.Map(process.Mapping{PID: up, Start: m.Start, End: m.End, Pgoff: pgoff, Path: m.Path, Anon: anon, Exec: true})
		}
		if exe, err := linux.Host.Exe(pid); err == nil {
			d.in.SetExe(up, exe)
		}
	}
}

// drain reads one round of records: side-band records as they come,
// samples once the round is in (the mapping a sample hit may be in
// another CPU's ring, drained later in the round).
func (d *daemon) drain() {
	d.pending, d.chains = d.pending[:0], d.chains[:0]
	_, err := d.set.Drain(func(raw []byte) {
		rec, err := d.dec.Decode(raw)
		if err != nil {
			return
		}
		switch r := rec.(type) {
		case *perfdata.Sample:
			p := pendingSample{s: *r, chain: len(d.chains)}
			d.chains = append(d.chains, r.Callchain...)
			p.end = len(d.chains)
			p.s.Callchain = nil
			d.pending = append(d.pending, p)
		case *perfdata.Lost:
			d.lost += r.Lost
			d.db.AddLost(0, r.Lost)
		case *perfdata.LostSamples:
			d.lost += r.Lost
			d.db.AddLost(0, r.Lost)
		default:
			d.procs.Take(rec)
			d.in.Take(rec)
		}
	})
	if err != nil {
		log.Printf("drain: %v", err)
	}
	last := ^uint32(0)
	for i := range d.pending {
		if pid := d.pending[i].s.PID; pid != last {
			d.in.Sampled(pid)
			last = pid
		}
	}
	d.in.BeginRound()
	for i := range d.pending {
		p := &d.pending[i]
		p.s.Callchain = d.chains[p.chain:p.end]
		d.in.Add(&p.s)
	}
	d.in.EndRound()
}

// flush writes the counts and copies the JIT data that changed.
func (d *daemon) flush() {
	d.in.SaveJIT()
	err := d.db.Flush()
	d.status.LastFlush = time.Now()
	if err != nil && (d.lastErr == nil || err.Error() != d.lastErr.Error()) {
		log.Printf("flush: %v (sampling goes on; counts wait for the next flush)", err)
	}
	d.lastErr = err
}

// snapshot fills in the status.
func (d *daemon) snapshot() Status {
	st := d.status
	s := d.db.Stats()
	st.Samples, st.Counts, st.Flushed, st.Dropped = d.in.Samples, s.Samples, s.Flushed, s.Dropped
	st.Files, st.OpenFiles = s.Files, s.Open
	st.SampleFiles, st.SampleData, st.Refused = s.DiskFiles, s.DiskBytes, s.Refused
	st.JITData, st.JITBounded = d.in.JITData, d.in.JITBounded
	st.Lost = d.lost
	st.Unresolved = d.in.Unresolved
	st.JITProcesses = d.in.JITProcesses()
	if d.lastErr != nil {
		st.FlushError = d.lastErr.Error()
		st.DiskFull = errors.Is(d.lastErr, sampledb.ErrNoSpace)
	}
	st.JITErrors = d.in.JITErrorList()
	st.SessionEvents = d.db.Meta().Events
	return st
}

// handle answers a client; it reports whether the daemon is to stop.
func (d *daemon) handle(r request) bool {
	var resp response
	switch r.Op {
	case "status":
	case "dump":
		d.drain()
		d.flush()
		if d.lastErr != nil {
			resp.Error = d.lastErr.Error()
		}
	case "stop":
		d.drain()
		d.flush()
	case "reset":
		d.drain()
		d.in.SaveJIT()
		if err := d.db.Reset(); err != nil {
			resp.Error = err.Error()
		}
		d.in.SessionChanged()
	case "save":
		d.drain()
		d.in.SaveJIT()
		if err := d.db.Save(r.Name); err != nil {
			resp.Error = err.Error()
		} else {
			d.in.SessionChanged()
		}
	default:
		resp.Error = fmt.Sprintf("unknown request %q", r.Op)
	}
	st := d.snapshot()
	resp.Status = &st
	r.reply <- resp
	return r.Op == "stop"
}

func (d *daemon) close() error {
	var errs []error
	if d.set != nil {
		if err := d.set.Disable(); err == nil {
			d.drain()
		}
	}
	if d.in != nil {
		d.in.SaveAllJIT()
		d.in.Close()
	}
	if d.set != nil {
		errs = append(errs, d.set.Close())
	}
	errs = append(errs, d.db.Close())
	return errors.Join(errs...)
}

// PIDFile is the daemon's pid file in the session directory.
const PIDFile = "jitprofd.pid"

// writePIDFile writes the pid file in the session directory root,
// created exclusively (one a killed daemon left is removed first: this
// process holds the session's lock).
func writePIDFile(root *os.Root) error {
	if err := root.Remove(PIDFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := root.OpenFile(PIDFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%d\n", os.Getpid())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
