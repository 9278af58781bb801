package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/perfevent"
	"github.com/jitprof/jitprof/perfdata"
)

// Config says what to record and how. One of PIDs, TIDs and SystemWide
// names the target, or else Command does. A Command given with one of
// them is a workload, as in perf record -a -- sleep 5: it runs while
// the target is recorded, and the recording ends when it exits.
type Config struct {
	Event     string // as perf record -e spells it; "" means cpu-clock
	Freq      uint64 // samples per second (-F); used when Period is 0; both 0: 4000, or every hit of a tracepoint
	MaxFreq   bool   // sample as often as the kernel allows (-F max), as perf does
	Period    uint64 // events per sample (-c)
	Callchain bool   // -g: frame-pointer callchains
	// UserStack, when not 0, records DWARF call graphs instead (perf's
	// --call-graph dwarf,SIZE): the user registers and this many bytes
	// of the user stack with each sample, for the report to unwind.
	UserStack uint32
	Pages     int // data pages per ring (-m), a power of two; 0 means perf's default

	Command    []string // run (and, alone, profile) this command, its children and threads
	Env        []string // the command's environment; nil means none
	Stdin      io.Reader
	Stdout     io.Writer
	Stderr     io.Writer
	PIDs       []int // existing processes (-p)
	TIDs       []int // existing threads (-t)
	SystemWide bool  // every CPU (-a)
	CPUs       []int // restrict to these CPUs (-C)

	// Pipe writes perf's pipe mode (perf record -o -), a stream that
	// needs no seeking, instead of a file.
	Pipe bool

	// Duration stops recording this long after sampling began (for a
	// command alone, at its exec; else once /proc is read); 0 records
	// until the target exits or ctx is done.
	Duration time.Duration
	// ForgetExited lets the Recorder let go of a process, its mappings,
	// names and identity, forgetAfter after it exited, so that a live
	// view fed for days on a machine that starts processes all the time
	// stays bounded. A recording keeps them: its file's build-ids and
	// JIT data are taken at the end.
	ForgetExited bool
	// Cmdline is the recorder's argv, for the CMDLINE feature.
	Cmdline []string
	// Progress, if set, is called after every drain round.
	Progress func(Progress)
	// Notice, if set, receives messages for the user, such as the
	// fall-back to user space only.
	Notice func(string)
	// NoBuildIDs says the Sink keeps no build-ids (a collector's, not a
	// perf.data file): the images samples hit are not noted.
	NoBuildIDs bool
	// RoundEvery, when set, is asked before each round how long it may
	// last at most (0: PollInterval): the daemon's rounds are longer at
	// the rates it samples at, and shorter while it follows JIT data
	// without times. A ring half full ends a round sooner whatever it
	// is.
	RoundEvery func() time.Duration
}

// Progress is the state of a recording so far.
type Progress struct {
	Samples uint64
	Lost    uint64 // samples the kernel dropped because a ring was full
	Bytes   int64  // of records written
}

// Result is what a finished recording holds.
type Result struct {
	Progress
	// UserOnly is set when the kernel refused kernel samples and the
	// recording fell back to user space only.
	UserOnly bool
	// BuildIDs is the number of images in the BUILD_ID feature.
	BuildIDs int
	// JITFiles is the number of JIT data files (perf maps, jitdumps,
	// jitlog databases) embedded in the recording (internal/jitbundle),
	// JITBytes their size there.
	JITFiles int
	JITBytes int64
	// FileBytes is the size of the recording written, header, records,
	// features and JIT data: what is on disk (Bytes counts the records).
	FileBytes int64
	// ExitStatus is the command's exit status as a shell reports it, or
	// -1 when no command was run.
	ExitStatus int
}

// PollInterval is the longest a round lasts: it bounds how late a
// recording notices ctx or its duration, how stale the file of a killed
// recorder can be, and how late the daemon answers a client.
const PollInterval = 100 * time.Millisecond

// Run records cfg's target into out until the target exits, cfg.Duration
// passes or ctx is done, and then completes the file. A command that is
// still running at that point gets SIGTERM, as perf record sends it.
// Errors come from perfevent and perfdata, which say what failed; a
// Result comes with an error when recording failed after the file began.
func Run(ctx context.Context, out io.Writer, cfg Config) (*Result, error) {
	if _, ok := out.(io.WriteSeeker); !ok && !cfg.Pipe {
		return nil, errors.New("a perf.data file is written to a seekable output; a stream is written with Config.Pipe")
	}
	var file *fileSink
	r, res, err := Stream(ctx, cfg, func(_ *Recorder, attr *perfdata.Attr, tracing *perfdata.TracingData) (Sink, error) {
		var err error
		file, err = newFileSink(out, cfg.Pipe, attr, tracing)
		return file, err
	})
	if r == nil {
		return nil, err
	}
	var ferr error
	res.BuildIDs, res.JITFiles, res.JITBytes, ferr = file.finish(r, cfg)
	res.Progress = r.progress()
	res.FileBytes = file.Size()
	return res, errors.Join(err, ferr)
}

// Stream records cfg's target as Run does, into the Sink that open
// returns once the events are open: attr describes them (their ids
// included), tracing is what decodes a tracepoint's samples, nil for
// other events, and r is the Recorder that will feed the Sink (its
// Tracker, empty yet, is where the processes will be). It returns the Recorder, which holds the recording's
// processes and counts, with the Result, whose BuildIDs and JITFiles are
// for the Sink's owner to set; the Sink is left open. A nil Recorder
// means recording failed before open was called, or open failed.
func Stream(ctx context.Context, cfg Config, open func(r *Recorder, attr *perfdata.Attr, tracing *perfdata.TracingData) (Sink, error)) (*Recorder, *Result, error) {
	ev, tracing, err := parseEvent(cfg)
	if err != nil {
		return nil, nil, err
	}
	res := &Result{ExitStatus: -1}
	tg, err := startTarget(cfg, ev)
	if err != nil {
		return nil, nil, err
	}
	set, err := openEvents(tg.opts, tg.target, res)
	if err != nil {
		return nil, nil, tg.abort(err)
	}
	defer set.Close()
	if res.UserOnly && cfg.Notice != nil {
		cfg.Notice(userOnlyNotice())
	}
	attr := fileAttr(set, eventName(ev, res.UserOnly))
	r := newRecorder(attr, !cfg.NoBuildIDs)
	if r.sink, err = open(r, attr, tracing); err != nil {
		return nil, nil, tg.abort(err)
	}
	r.forget = cfg.ForgetExited
	if err := r.begin(set, cfg, tg); err != nil {
		return nil, nil, tg.abort(err)
	}
	// What the events wrote while /proc was read goes before the command
	// runs: on a busy machine that reading takes long enough to fill the
	// rings, and a full ring drops the command's first records (its
	// exec's COMM) as lost.
	if r.drain(set) != nil {
		return nil, nil, tg.abort(r.err)
	}
	if r.began.IsZero() {
		r.began = time.Now() // a lone command: its exec enables the events
	}
	if err := tg.run(); err != nil {
		return nil, nil, tg.abort(err)
	}
	var end time.Time
	if cfg.Duration > 0 {
		end = r.began.Add(cfg.Duration)
	}
	targetDone := r.loop(ctx, set, cfg, tg.workloadDone(), end)
	r.stop(set, targetDone)
	if err := tg.end(targetDone); err != nil {
		r.err = errors.Join(r.err, err)
	}
	res.ExitStatus = tg.status
	res.Progress = r.progress()
	return r, res, r.err
}

// parseEvent parses cfg's event and reads what perf needs to decode a
// tracepoint's samples, telling the user where tracefs was mounted.
func parseEvent(cfg Config) (perfevent.Event, *perfdata.TracingData, error) {
	ev, err := perfevent.ParseEvent(cfg.Event)
	if err != nil {
		return ev, nil, err
	}
	if ev.MountedTracefs != "" && cfg.Notice != nil {
		cfg.Notice(fmt.Sprintf("mounted tracefs at %s for %s, as perf does", ev.MountedTracefs, ev.Name))
	}
	tracing, err := tracingData(ev)
	return ev, tracing, err
}

// target is what a recording watches: the events' options and target,
// and the command, started and stopped before it runs, when there is one.
type target struct {
	opts   perfevent.Options
	target perfevent.Target
	cmd    *perfevent.Command
	// workload says the command runs beside the target (-a, -p, -t),
	// whose end it decides, rather than being the target.
	workload bool
	exited   chan struct{} // closed when the command has exited
	status   int
	waitErr  error
}

// startTarget starts cfg's command, stopped until its events are
// enabled (a lone command is profiled from its exec on).
func startTarget(cfg Config, ev perfevent.Event) (*target, error) {
	tg := &target{
		opts:   perfevent.Options{Event: ev, Freq: cfg.Freq, Period: cfg.Period, Callchain: cfg.Callchain, UserStack: cfg.UserStack, Pages: cfg.Pages},
		target: perfevent.Target{CPUs: cfg.CPUs, PIDs: cfg.PIDs, TIDs: cfg.TIDs, SystemWide: cfg.SystemWide},
		status: -1,
	}
	if cfg.MaxFreq {
		rate, err := linux.MaxSampleRate()
		if err != nil {
			return nil, fmt.Errorf("the most frequent sampling the kernel allows: %w", err)
		}
		tg.opts.Freq = uint64(rate)
	}
	if len(cfg.Command) == 0 {
		return tg, nil
	}
	cmd, err := perfevent.StartCommand(cfg.Command, cfg.Env, cfg.Stdin, cfg.Stdout, cfg.Stderr)
	if err != nil {
		return nil, err
	}
	tg.cmd = cmd
	if tg.workload = len(cfg.PIDs)+len(cfg.TIDs) > 0 || cfg.SystemWide; !tg.workload {
		tg.target.PIDs = []int{cmd.Pid}
		tg.opts.EnableOnExec = true
	}
	return tg, nil
}

// abort ends a recording that failed before its command ran: the
// command, stopped, is killed.
func (tg *target) abort(err error) error {
	if tg.cmd == nil {
		return err
	}
	if kerr := tg.cmd.Kill(); kerr != nil {
		return errors.Join(err, kerr)
	}
	_, werr := tg.cmd.Wait()
	return errors.Join(err, werr)
}

// run lets the command run, and waits for it in the background.
func (tg *target) run() error {
	if tg.cmd == nil {
		return nil
	}
	if err := tg.cmd.Go(); err != nil {
		return err
	}
	tg.exited = make(chan struct{})
	go func() {
		tg.status, tg.waitErr = tg.cmd.Wait()
		close(tg.exited)
	}()
	return nil
}

// workloadDone is closed when a workload command has exited; nil (never
// ready) when there is none.
func (tg *target) workloadDone() <-chan struct{} {
	if tg.workload {
		return tg.exited
	}
	return nil
}

// end waits for the command, asking it to end, as perf does, when it
// outlived the recording: when the command was the target and its events
// ended (targetDone), it has exited already.
func (tg *target) end(targetDone bool) error {
	if tg.cmd == nil {
		return nil
	}
	if !targetDone || tg.workload {
		select {
		case <-tg.exited:
		default:
			_ = unix.Kill(tg.cmd.Pid, unix.SIGTERM)
		}
	}
	<-tg.exited
	return tg.waitErr
}

// begin writes what precedes the samples: the kernel's mapping and, when
// something other than a lone command is recorded, the processes that
// run already. Enabling the events before reading /proc means a mapping
// made meanwhile is seen twice rather than missed; the samples taken
// meanwhile are not recorded (handle), since sampling begins once /proc
// is read: perf enables its sampling events then (and a dummy event
// for the mappings before), so that a recording holds neither the
// profiler reading /proc, which on a busy machine takes longer than a
// short recording, nor that time in its span.
func (r *Recorder) begin(set *perfevent.EventSet, cfg Config, tg *target) error {
	r.synthKernel()
	if tg.cmd != nil && !tg.workload {
		return nil // its events start at its exec
	}
	if err := set.Enable(); err != nil {
		return err
	}
	if err := r.synthProcesses(cfg); err != nil {
		return err
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return fmt.Errorf("read CLOCK_MONOTONIC: %w", err)
	}
	r.from, r.began = uint64(ts.Nano()), time.Now()
	return nil
}

// loop drains the rings until ctx is done, end passes (the zero time:
// never), a workload exits (workloadDone; nil when there is none) or
// the target's events end (reported as targetDone).
func (r *Recorder) loop(ctx context.Context, set *perfevent.EventSet, cfg Config, workloadDone <-chan struct{}, end time.Time) (targetDone bool) {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-workloadDone:
			return false
		default:
		}
		var every time.Duration
		if cfg.RoundEvery != nil {
			every = cfg.RoundEvery()
		}
		wait, over := pollWait(time.Now(), end, every)
		if over {
			return false
		}
		done, err := set.Poll(wait)
		if err != nil {
			r.err = errors.Join(r.err, err)
			return false
		}
		if r.drain(set) != nil {
			return false
		}
		if cfg.Progress != nil {
			cfg.Progress(r.progress())
		}
		if done {
			return true
		}
	}
}

// pollWait is how long the drain loop may wait for records at now:
// every (PollInterval when 0), or less when the recording's end is
// nearer, so that a recording of a duration ends at it rather than up
// to a round later; over says end has come. The zero end is no end.
func pollWait(now, end time.Time, every time.Duration) (wait time.Duration, over bool) {
	if every <= 0 {
		every = PollInterval
	}
	if end.IsZero() {
		return every, false
	}
	left := end.Sub(now)
	if left <= 0 {
		return 0, true
	}
	return min(left, every), false
}

// stop disables the events, unless they ended with their target, and
// drains what they wrote last.
func (r *Recorder) stop(set *perfevent.EventSet, targetDone bool) {
	if !targetDone {
		if err := set.Disable(); err != nil {
			r.err = errors.Join(r.err, err)
		}
	}
	r.drain(set)
}

// openEvents opens the events; when the kernel refuses kernel samples to
// a task target it falls back to user space only, as perf record does
// under perf_event_paranoid 2.
func openEvents(opts perfevent.Options, t perfevent.Target, res *Result) (*perfevent.EventSet, error) {
	set, err := perfevent.OpenEvents(opts, t)
	if err == nil || !errors.Is(err, perfevent.ErrPermission) || t.SystemWide || opts.Event.ExcludeKernel {
		return set, err
	}
	opts.ExcludeKernel = true
	set, err2 := perfevent.OpenEvents(opts, t)
	if err2 != nil {
		return nil, err2
	}
	res.UserOnly = true
	return set, nil
}

func userOnlyNotice() string {
	level := "unknown"
	if p, err := linux.Paranoid(); err == nil {
		level = fmt.Sprint(p)
	}
	return "perf_event_paranoid is " + level + ": recording user space only " +
		"(set /proc/sys/kernel/perf_event_paranoid to 1 or lower, or grant CAP_PERFMON, to sample the kernel too)"
}

// eventName is the event's name as perf shows it; a fall-back to user
// space gets perf's :u.
func eventName(ev perfevent.Event, userOnly bool) string {
	name := ev.Name
	if name == "" {
		name = perfevent.DefaultEvent
	}
	if userOnly && !strings.Contains(name, ":") {
		name += ":u"
	}
	return name
}

// fileAttr describes the opened events exactly, for the attrs section.
func fileAttr(set *perfevent.EventSet, name string) *perfdata.Attr {
	a := set.Attr()
	pa := &perfdata.Attr{
		Type:             a.Type,
		Size:             a.Size,
		Config:           a.Config,
		SamplePeriod:     a.Sample,
		SampleType:       perfdata.SampleFormat(a.Sample_type),
		ReadFormat:       perfdata.ReadFormat(a.Read_format),
		Flags:            perfdata.AttrFlags(a.Bits),
		WakeupEvents:     a.Wakeup,
		BPType:           a.Bp_type,
		Config1:          a.Ext1,
		Config2:          a.Ext2,
		BranchSampleType: a.Branch_sample_type,
		SampleRegsUser:   a.Sample_regs_user,
		SampleStackUser:  a.Sample_stack_user,
		ClockID:          a.Clockid,
		SampleRegsIntr:   a.Sample_regs_intr,
		AuxWatermark:     a.Aux_watermark,
		SampleMaxStack:   a.Sample_max_stack,
		AuxSampleSize:    a.Aux_sample_size,
		SigData:          a.Sig_data,
		Name:             name,
	}
	for _, e := range set.Events() {
		pa.IDs = append(pa.IDs, e.ID)
	}
	return pa
}
