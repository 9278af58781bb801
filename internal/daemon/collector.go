package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/delivery"
	"github.com/jitprof/jitprof/internal/ingest"
	"github.com/jitprof/jitprof/internal/linux"
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
	// (-g: arcs into {cg} files) and UserStack (-g dwarf: user stacks
	// unwound into them), the target (SystemWide, PIDs, TIDs, CPUs) and
	// Pages. Its Command and the fields about a file are not
	// used.
	Sample   record.Config
	Separate sampledb.Separate
	// FlushEvery is how often counts reach the files; 0 is
	// DefaultFlushEvery.
	FlushEvery time.Duration
	// MaxJITData and MaxJITDataPerProcess bound the JIT data copied into
	// the session, MaxSampleFiles and MaxSampleData its sample files (0:
	// the defaults, ingest.DefaultMaxJITData and so on).
	MaxJITData, MaxJITDataPerProcess int64
	MaxSampleFiles                   int
	MaxSampleData                    int64
	// Push, when set, pushes what is sampled to an OpenTelemetry
	// Collector (push.go).
	Push *Push
}

// roundEvery is how long the daemon's rounds last, at most, sampling as
// sc says, so that a round has some n samples of each CPU's: at least
// record.PollInterval (100 ms), at most maxRound (500 ms). A round's
// fixed costs do not shrink with the rate: the drain of every ring, a
// wakeup of the Go runtime's sysmon thread that polls every 20 µs for
// the next millisecond and more (a third of the CPU time of a daemon at
// 19 Hz, `perf record -g` of it), ingest's round. A ring half full ends
// a round sooner whatever its length; what waits longer is a client's
// answer (status, stop), up to maxRound, and a dump's or save's, up to
// two of them (daemon.held).
func roundEvery(sc *record.Config, n uint64) time.Duration {
	if sc.Freq == 0 || sc.MaxFreq {
		return record.PollInterval
	}
	d := time.Duration(n * uint64(time.Second) / sc.Freq)
	return min(max(d, record.PollInterval), maxRound)
}

// perRound is the samples of each CPU a round holds: 500 ms at 1 kHz.
// Rounds of 100 ms at 1 kHz took twice the CPU time: two daemons of
// each beside bench/daemon/push.sh's workload, 120 s, 0.35 and 0.38 CPU
// seconds against 0.18 and 0.18. perTimelessRound holds while the
// daemon follows a perf map (ingest.Ingest.Timeless), whose lines are
// stamped when a round reads them: code a JIT put in place of other
// code at one address is named as the code before it in the samples of
// the round it was written in, so those rounds stay as short as they
// were, 100 ms at 1 kHz.
const (
	perRound         = 500
	perTimelessRound = 100
)

// maxRound bounds the daemon's rounds: how long a client waits for an
// answer.
const maxRound = 500 * time.Millisecond

// DefaultFreq is the daemon's sampling frequency: OProfile's default
// rate was about 2,000 interrupts a second per CPU; perf's 4,000 costs
// more for a profile that runs for weeks.
const DefaultFreq = 1000

// DefaultFlushEvery is how often counts reach the files: what a daemon
// killed with SIGKILL loses at most.
const DefaultFlushEvery = 3 * time.Second

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
	Counts     uint64 `json:"counts"`
	Flushed    uint64 `json:"flushed"`
	Lost       uint64 `json:"lost"`
	Dropped    uint64 `json:"dropped"`
	Unresolved uint64 `json:"unresolved"`
	// ResyncReads counts the reads of a process's mappings from /proc
	// after the kernel lost records, Resynced those that found mappings
	// the lost records told of.
	ResyncReads  uint64 `json:"resync_reads"`
	Resynced     uint64 `json:"resynced"`
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
	UserStack            uint32           `json:"user_stack,omitempty"` // with CallGraph: DWARF, bytes of stack a sample
	SessionEvents        []sampledb.Event `json:"session_events"`
	// OTLP is what the push to a Collector has done, nil without one.
	OTLP *PushStatus `json:"otlp,omitempty"`
}

// daemon is the running collector: a record.Sink that counts each
// round's samples into the session, and answers its clients between
// rounds.
type daemon struct {
	cfg   Config
	db    *sampledb.DB
	dec   *perfdata.Decoder
	in    *ingest.Ingest
	start time.Time
	reqs  chan request
	// held are the dump and save requests taken at the end of a round,
	// answered at the end of the next: a drain that began after they
	// came, so that the counts they write hold every sample taken
	// before them. Answered at the end of the round they came in, they
	// missed what was sampled between its drain and them (as long as
	// the round took to count: the end of a JIT's run, a test found,
	// when a loaded daemon's rounds were slow).
	held   []request
	status Status
	// stop ends the recording: a client asked, or ctx is done.
	stop    context.CancelFunc
	stopped bool
	ready   func()
	flushAt time.Time

	push    *pusher // nil without Config.Push
	lastErr error
}

// Run runs the daemon until ctx is done or a client asks it to stop:
// it opens the events through record.Stream (the recorder's events,
// fall-back to user space only, and synthesis of the processes that run
// already), the session directory (ErrLocked if a daemon has it), the
// control socket and the pid file, calls ready once it samples, and then
// counts samples into the session, flushing every cfg.FlushEvery, on
// dump and at the end.
func Run(ctx context.Context, cfg Config, ready func()) (err error) {
	if cfg.FlushEvery <= 0 {
		cfg.FlushEvery = DefaultFlushEvery
	}
	sc := &cfg.Sample
	if sc.Freq == 0 && sc.Period == 0 && !sc.MaxFreq {
		sc.Freq = DefaultFreq
	}
	sc.Command, sc.Duration, sc.Progress = nil, 0, nil
	sc.NoBuildIDs = true
	long, short := roundEvery(sc, perRound), roundEvery(sc, perTimelessRound)
	d := &daemon{cfg: cfg, start: time.Now(), reqs: make(chan request), ready: ready}
	sc.RoundEvery = func() time.Duration {
		if d.in != nil && d.in.Timeless() {
			return short
		}
		return long
	}
	sc.Notice = func(msg string) { log.Print(msg) }
	cfg.MaxJITData = cmp.Or(cfg.MaxJITData, ingest.DefaultMaxJITData)
	cfg.MaxJITDataPerProcess = cmp.Or(cfg.MaxJITDataPerProcess, ingest.DefaultMaxJITDataPerProcess)
	cfg.MaxSampleFiles = cmp.Or(cfg.MaxSampleFiles, ingest.DefaultMaxSampleFiles)
	cfg.MaxSampleData = cmp.Or(cfg.MaxSampleData, ingest.DefaultMaxSampleData)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	d.stop = stop
	pidFile := false
	var pidRoot *os.Root
	var inflight sync.WaitGroup
	defer func() {
		stop() // the listener closed, requests not taken answered
		if cerr := d.close(); err == nil {
			err = cerr
		}
		waitAnswered(&inflight, 5*time.Second)
		// Last: stop waits for the pid file to go.
		if pidFile {
			pidRoot.Remove(PIDFile)
			pidRoot.Close()
		}
	}()
	_, _, err = record.Stream(ctx, *sc, func(r *record.Recorder, attr *perfdata.Attr, _ *perfdata.TracingData) (record.Sink, error) {
		if err := d.open(r.Tracker(), r.Forget, attr); err != nil {
			return nil, err
		}
		if cfg.Push != nil {
			exp, err := delivery.NewChild(cfg.Push.Exporter, cfg.Push.Delivery)
			if err != nil {
				return nil, fmt.Errorf("otlp push: %w", err)
			}
			if err := d.startPush(exp, attr, r.Tracker(), r.Identity); err != nil {
				return nil, err
			}
		}
		ln, err := listen(d.db.Root(), cfg.Dir)
		if err != nil {
			return nil, err
		}
		context.AfterFunc(ctx, func() { ln.Close() })
		inflight.Add(1)
		go serve(ln, d.reqs, ctx.Done(), &inflight)
		// The pid file is removed after the DB, which closes its Root,
		// is closed: a Root of its own.
		if pidRoot, err = d.db.Root().OpenRoot("."); err != nil {
			return nil, err
		}
		if err := writePIDFile(pidRoot); err != nil {
			pidRoot.Close()
			return nil, err
		}
		pidFile = true
		return d, nil
	})
	if err == nil && !d.stopped && ctx.Err() == nil {
		log.Printf("every target process exited")
	}
	return err
}

// open opens the session for the events of attr, whose processes procs
// follows and forget lets go of (a Recorder's).
func (d *daemon) open(procs *process.Tracker, forget func(pid uint32), attr *perfdata.Attr) error {
	cfg := d.cfg
	name := attr.Name
	sev := sampledb.Event{Name: name, Count: attr.SamplePeriod, Freq: attr.Freq()}
	db, err := sampledb.Create(cfg.Dir, sampledb.Options{Separate: cfg.Separate, Events: []sampledb.Event{sev},
		MaxFiles: cfg.MaxSampleFiles, MaxBytes: cfg.MaxSampleData})
	if err != nil {
		return err
	}
	d.db = db
	d.dec = perfdata.NewDecoder([]*perfdata.Attr{attr})
	d.in = ingest.New(db, procs, 0)
	d.in.Forget = forget
	d.in.CallGraph = cfg.Sample.Callchain
	d.in.Unwind = cfg.Sample.UserStack != 0
	d.in.Resync = true // its processes run now: /proc has what a lost record said
	d.in.MaxJITData, d.in.MaxJITDataPerProcess = cfg.MaxJITData, cfg.MaxJITDataPerProcess
	d.status = Status{PID: os.Getpid(), Dir: cfg.Dir, Start: d.start, Events: []string{name}, Separate: cfg.Separate.String(), CallGraph: cfg.Sample.Callchain, UserStack: cfg.Sample.UserStack,
		MaxSampleFiles: cfg.MaxSampleFiles, MaxSampleData: cfg.MaxSampleData, MaxJITData: cfg.MaxJITData, MaxJITDataPerProcess: cfg.MaxJITDataPerProcess}
	switch sc := cfg.Sample; {
	case len(sc.PIDs) > 0:
		d.status.Target = fmt.Sprint("processes ", sc.PIDs)
	case len(sc.TIDs) > 0:
		d.status.Target = fmt.Sprint("threads ", sc.TIDs)
	case len(sc.CPUs) > 0:
		d.status.Target = fmt.Sprint("CPUs ", sc.CPUs)
	default:
		d.status.Target = "all CPUs"
	}
	d.flushAt = time.Now().Add(cfg.FlushEvery)
	return nil
}

// Raw implements record.Sink: side-band records as they come, samples
// once the round is in (the mapping a sample hit may be in another CPU's
// ring, drained later in the round).
func (d *daemon) Raw(raw []byte) error {
	rec, err := d.dec.Decode(raw)
	if err != nil {
		return nil
	}
	d.in.Handle(rec)
	return nil
}

// Record implements record.Sink: the processes that ran before the
// daemon, as the recorder read them from /proc; their executables are
// read there too, as no exec of theirs will say.
func (d *daemon) Record(rec perfdata.Record) error {
	if c, ok := rec.(*perfdata.Comm); ok && c.PID == c.TID {
		if exe, err := linux.Host.Exe(int(c.PID)); err == nil {
			d.in.SetExe(c.PID, exe)
		}
	}
	return nil
}

// Written implements record.Sink: the daemon keeps counts, not records.
func (d *daemon) Written() int64 { return 0 }

// EndRound implements record.Sink: the round's samples are counted, and
// then the daemon flushes when it is time and answers its clients.
func (d *daemon) EndRound(*record.Recorder) error {
	if d.push == nil {
		d.in.Round(nil)
	} else {
		d.in.Round(d.push.add)
		d.push.endRound()
	}
	if d.ready != nil {
		d.ready()
		d.ready = nil
	}
	if now := time.Now(); !now.Before(d.flushAt) {
		d.flush()
		d.flushAt = now.Add(d.cfg.FlushEvery)
	}
	d.answerHeld()
	for !d.stopped {
		select {
		case r := <-d.reqs:
			if r.Op == "dump" || r.Op == "save" {
				d.held = append(d.held, r)
			} else {
				d.handle(r)
			}
			continue
		default:
		}
		break
	}
	return nil
}

// answerHeld answers the requests held for a drain after them.
func (d *daemon) answerHeld() {
	for _, r := range d.held {
		d.handle(r)
	}
	clear(d.held)
	d.held = d.held[:0]
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
	st.Lost = d.in.Lost
	st.Unresolved = d.in.Unresolved
	st.ResyncReads, st.Resynced = d.in.ResyncReads, d.in.Resynced
	st.JITProcesses = d.in.JITProcesses()
	if d.lastErr != nil {
		st.FlushError = d.lastErr.Error()
		st.DiskFull = errors.Is(d.lastErr, sampledb.ErrNoSpace)
	}
	st.JITErrors = d.in.JITErrorList()
	st.SessionEvents = d.db.Meta().Events
	if d.push != nil {
		ps := d.push.status()
		st.OTLP = &ps
	}
	return st
}

// handle answers a client at the end of a round, whose samples are
// counted; stop ends the recording, whose last round comes after.
func (d *daemon) handle(r request) {
	var resp response
	switch r.Op {
	case "status":
	case "dump", "stop":
		d.flush()
		if d.lastErr != nil && r.Op == "dump" {
			resp.Error = d.lastErr.Error()
		}
	case "reset":
		d.in.SaveJIT()
		if err := d.db.Reset(); err != nil {
			resp.Error = err.Error()
		}
		d.in.SessionChanged()
	case "save":
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
	if r.Op == "stop" {
		d.stopped = true
		d.stop()
	}
}

// close ends the session once the recording has ended (its last round
// counted): the JIT data and the counts are saved.
func (d *daemon) close() error {
	if d.db == nil {
		return nil
	}
	var perr error
	if d.push != nil {
		perr = d.push.close()
		st := d.push.status()
		log.Printf("otlp push: %d of the %d samples taken put in batches, %d dropped; %d batches sent, %d wait in %s",
			st.Samples, d.in.Samples, st.DroppedSamples, st.Sent, st.Queued, SpoolDir)
	}
	d.answerHeld() // the recording's last round is counted
	if d.in != nil {
		d.in.SaveAllJIT()
		d.in.Close()
	}
	return errors.Join(perr, d.db.Close())
}

// startPush starts pushing through exp, the samples of the processes t
// follows, who identity says they are: processes ingest lets go of are
// forgotten once the push no longer needs their mappings.
func (d *daemon) startPush(exp delivery.Exporter, attr *perfdata.Attr, t *process.Tracker, identity func(uint32) (linux.Identity, bool)) error {
	p, err := newPusher(d.db.Root(), *d.cfg.Push, exp, attr, d.cfg.Sample.Callchain, t, identity, d.in.Forget)
	if err != nil {
		return fmt.Errorf("otlp push: %w", err)
	}
	// PyPy's loops are named by the dump of its log that ingest keeps
	// in the session, which reports of the session name them by.
	p.procs.pypyDump = d.in.PyPyDump
	d.push = p
	d.in.Forget = p.forgetLater
	return nil
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
