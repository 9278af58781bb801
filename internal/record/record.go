package record

import (
	"bytes"
	"context"
	"encoding/binary"
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
	Period    uint64 // events per sample (-c)
	Callchain bool   // -g: frame-pointer callchains
	Pages     int    // data pages per ring (-m), a power of two; 0 means perf's default

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

	// Duration stops recording after this long; 0 records until the
	// target exits or ctx is done.
	Duration time.Duration
	// Cmdline is the recorder's argv, for the CMDLINE feature.
	Cmdline []string
	// Progress, if set, is called after every drain round.
	Progress func(Progress)
	// Notice, if set, receives messages for the user, such as the
	// fall-back to user space only.
	Notice func(string)
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
	// jitlog databases) embedded in the recording (internal/jitbundle).
	JITFiles int
	// ExitStatus is the command's exit status as a shell reports it, or
	// -1 when no command was run.
	ExitStatus int
}

// pollInterval bounds how late a recording notices ctx or its duration,
// and how stale the file of a killed recorder can be.
const pollInterval = 100 * time.Millisecond

// finishedRound is perf's PERF_RECORD_FINISHED_ROUND: a bare header.
var finishedRound = []byte{byte(perfdata.RecordFinishedRound), 0, 0, 0, 0, 0, 8, 0}

// Run records cfg's target into out until the target exits, cfg.Duration
// passes or ctx is done, and then completes the file. A command that is
// still running at that point gets SIGTERM, as perf record sends it.
// Errors come from perfevent and perfdata, which say what failed; a
// Result comes with an error when recording failed after the file began.
func Run(ctx context.Context, out io.Writer, cfg Config) (*Result, error) {
	seeker, ok := out.(io.WriteSeeker)
	if !ok && !cfg.Pipe {
		return nil, errors.New("a perf.data file is written to a seekable output; a stream is written with Config.Pipe")
	}
	ev, err := perfevent.ParseEvent(cfg.Event)
	if err != nil {
		return nil, err
	}
	if ev.MountedTracefs != "" && cfg.Notice != nil {
		cfg.Notice(fmt.Sprintf("mounted tracefs at %s for %s, as perf does", ev.MountedTracefs, ev.Name))
	}
	tracing, err := tracingData(ev)
	if err != nil {
		return nil, err
	}
	opts := perfevent.Options{Event: ev, Freq: cfg.Freq, Period: cfg.Period, Callchain: cfg.Callchain, Pages: cfg.Pages}
	target := perfevent.Target{CPUs: cfg.CPUs, PIDs: cfg.PIDs, TIDs: cfg.TIDs, SystemWide: cfg.SystemWide}
	res := &Result{ExitStatus: -1}

	var cmd *perfevent.Command
	workload := false // the command runs beside the target
	if len(cfg.Command) > 0 {
		cmd, err = perfevent.StartCommand(cfg.Command, cfg.Env, cfg.Stdin, cfg.Stdout, cfg.Stderr)
		if err != nil {
			return nil, err
		}
		if workload = len(cfg.PIDs)+len(cfg.TIDs) > 0 || cfg.SystemWide; !workload {
			target.PIDs = []int{cmd.Pid}
			opts.EnableOnExec = true
		}
	}
	set, err := openEvents(opts, target, res)
	if err != nil {
		if cmd != nil {
			err = errors.Join(err, killWait(cmd))
		}
		return nil, err
	}
	defer set.Close()
	if res.UserOnly && cfg.Notice != nil {
		cfg.Notice(userOnlyNotice())
	}

	attr := fileAttr(set, eventName(ev, res.UserOnly))
	var w *perfdata.Writer
	if cfg.Pipe {
		w, err = perfdata.NewPipeWriter(out, []*perfdata.Attr{attr})
	} else {
		w, err = perfdata.NewWriter(seeker, []*perfdata.Attr{attr})
	}
	if err != nil {
		if cmd != nil {
			err = errors.Join(err, killWait(cmd))
		}
		return nil, err
	}
	if tracing != nil {
		w.Features.SetTracingData(tracing)
	}
	r := newRecorder(w, attr)
	r.synthKernel()
	if cmd == nil || workload {
		// Enabling before reading /proc means a mapping made meanwhile
		// is seen twice rather than missed.
		err := set.Enable()
		if err == nil {
			err = r.synthProcesses(cfg)
		}
		if err != nil {
			if cmd != nil {
				err = errors.Join(err, killWait(cmd))
			}
			return nil, err
		}
	}
	var exited chan struct{} // closed when the command has exited
	var status int
	var waitErr error
	if cmd != nil {
		if err := cmd.Go(); err != nil {
			return nil, errors.Join(err, killWait(cmd))
		}
		exited = make(chan struct{})
		go func() {
			status, waitErr = cmd.Wait()
			close(exited)
		}()
	}
	var workloadDone <-chan struct{} // a nil channel never fires
	if workload {
		workloadDone = exited
	}

	var deadline <-chan time.Time
	if cfg.Duration > 0 {
		t := time.NewTimer(cfg.Duration)
		defer t.Stop()
		deadline = t.C
	}
	targetDone := false
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-deadline:
			break loop
		case <-workloadDone:
			break loop
		default:
		}
		done, err := set.Poll(pollInterval)
		if err != nil {
			r.err = errors.Join(r.err, err)
			break
		}
		r.drain(set)
		if r.err != nil {
			break
		}
		if cfg.Progress != nil {
			cfg.Progress(r.progress())
		}
		if done {
			targetDone = true
			break
		}
	}
	if !targetDone {
		if err := set.Disable(); err != nil {
			r.err = errors.Join(r.err, err)
		}
	}
	r.drain(set)
	if cmd != nil {
		// When the command was the target and its events ended, it
		// has exited: only a workload or a stopped recording may have
		// left it running.
		if !targetDone || workload {
			select {
			case <-exited:
			default:
				// The command outlived the recording; like perf, ask it to end.
				_ = unix.Kill(cmd.Pid, unix.SIGTERM)
			}
		}
		<-exited
		if waitErr != nil {
			r.err = errors.Join(r.err, waitErr)
		}
		res.ExitStatus = status
	}
	res.BuildIDs = r.finish(cfg)
	if len(cfg.Command) > 0 {
		r.pypyLog = pypyLogFile(cfg.Env)
	}
	res.JITFiles = r.embedJITData(cfg.Notice)
	if err := w.Close(); err != nil {
		r.err = errors.Join(r.err, err)
	}
	res.Progress = r.progress()
	if r.err != nil {
		return res, r.err
	}
	return res, nil
}

func killWait(cmd *perfevent.Command) error {
	if err := cmd.Kill(); err != nil {
		return err
	}
	_, err := cmd.Wait()
	return err
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

// recorder writes a recording's records and keeps what the end of the
// file needs: counts, sample times and the images samples hit.
type recorder struct {
	w    *perfdata.Writer
	attr *perfdata.Attr
	err  error

	samples, lost uint64
	first, last   uint64
	// Offsets of sample fields, from the attr's sample_type.
	ipOff, tidOff, timeOff int

	images
	pending []userIP // this round's user-space samples
	tsc     tscClock
	// pypyLog is the FILE of the command's PYPYLOG, "" without one.
	pypyLog string
}

type userIP struct {
	pid uint32
	ip  uint64
}

func newRecorder(w *perfdata.Writer, attr *perfdata.Attr) *recorder {
	r := &recorder{w: w, attr: attr, ipOff: -1, tidOff: -1, timeOff: -1, images: newImages(), tsc: startTSC()}
	off := 8 // after the header
	st := attr.SampleType
	for _, f := range []perfdata.SampleFormat{perfdata.SampleIdentifier, perfdata.SampleIP, perfdata.SampleTID, perfdata.SampleTime} {
		if st&f == 0 {
			continue
		}
		switch f {
		case perfdata.SampleIP:
			r.ipOff = off
		case perfdata.SampleTID:
			r.tidOff = off
		case perfdata.SampleTime:
			r.timeOff = off
		}
		off += 8
	}
	return r
}

func (r *recorder) progress() Progress {
	return Progress{Samples: r.samples, Lost: r.lost, Bytes: r.w.DataSize()}
}

// drain writes one round: every waiting record, then FINISHED_ROUND, and
// flushes so a killed recorder leaves the round in the file.
func (r *recorder) drain(set *perfevent.EventSet) {
	n, err := set.Drain(r.handle)
	if err != nil {
		// A corrupt ring lost its unread records; the rest is good.
		r.err = errors.Join(r.err, err)
	}
	// Samples are matched to images only once the whole round is in: the
	// MMAP2 a sample hit may sit in another CPU's ring, drained later in
	// the round, but never in a later round.
	for _, s := range r.pending {
		r.hit(s.pid, s.ip)
	}
	r.pending = r.pending[:0]
	if n > 0 {
		r.write(finishedRound)
	}
	// Flush also keeps the header's data size current, so a killed
	// jitprof leaves a file perf reads to the last whole round.
	if err := r.w.Flush(); err != nil && r.err == nil {
		r.err = err
	}
}

func (r *recorder) write(rec []byte) {
	if err := r.w.WriteRaw(rec); err != nil && r.err == nil {
		r.err = err
	}
}

// Record types and misc bits the recorder looks into.
const (
	miscCPUModeMask = 7
	miscKernel      = 1
	miscCommExec    = 1 << 13 // PERF_RECORD_MISC_COMM_EXEC
)

// handle writes one kernel record and notes what the end of the file
// needs. The kernel writes host byte order, which is the order the
// perf.data writer assumes too.
func (r *recorder) handle(rec []byte) {
	r.write(rec)
	ne := binary.NativeEndian
	misc := ne.Uint16(rec[4:])
	switch ne.Uint32(rec) {
	case unix.PERF_RECORD_SAMPLE:
		r.samples++
		if r.timeOff >= 0 && len(rec) >= r.timeOff+8 {
			t := ne.Uint64(rec[r.timeOff:])
			if r.first == 0 || t < r.first {
				r.first = t
			}
			r.last = max(r.last, t)
		}
		if r.ipOff < 0 || r.tidOff < 0 || len(rec) < max(r.ipOff, r.tidOff)+8 {
			return
		}
		if misc&miscCPUModeMask == miscKernel {
			r.kernelHit = true
			return
		}
		r.pending = append(r.pending, userIP{ne.Uint32(rec[r.tidOff:]), ne.Uint64(rec[r.ipOff:])})
	case unix.PERF_RECORD_MMAP2:
		// pid, tid, addr, len, pgoff, maj, min, ino, ino_generation,
		// prot, flags, filename.
		if len(rec) < 8+64 {
			return
		}
		b := rec[8:]
		addr, size := ne.Uint64(b[8:]), ne.Uint64(b[16:])
		pid := ne.Uint32(b)
		name := cString(b[64:])
		r.mmap(pid, addr, addr+size, name, perfdata.IsAnon(name, ne.Uint32(b[60:])))
		if !r.proc(pid).idKnown {
			r.identify(pid)
		}
	case unix.PERF_RECORD_FORK:
		if len(rec) >= 16 {
			pid, ppid := ne.Uint32(rec[8:]), ne.Uint32(rec[12:])
			r.fork(pid, ppid)
			if pid != ppid {
				// A new process, perhaps with the pid of one that has
				// exited. It starts as its parent; /proc says whether
				// it is still.
				p, parent := r.proc(pid), r.proc(ppid)
				p.id, p.idKnown = parent.id, parent.idKnown
				p.id.StartTime = 0
				r.identify(pid)
			}
		}
	case unix.PERF_RECORD_COMM:
		// An exec can change who the process is: su's child execs its
		// user's shell after setuid.
		if misc&miscCommExec != 0 && len(rec) >= 12 {
			r.identify(ne.Uint32(rec[8:]))
		}
	case unix.PERF_RECORD_LOST:
		if len(rec) >= 24 {
			r.lost += ne.Uint64(rec[16:])
		}
	}
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
