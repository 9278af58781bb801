package record

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/perfevent"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/perfdata"
)

// Sink is where a Recorder's records go: a perf.data file or stream
// (what Run writes), or a collector's own store.
type Sink interface {
	// Raw takes a record as the kernel wrote it into a ring buffer, a
	// perf_event_header and its body in the host's byte order; rec is
	// valid only during the call.
	Raw(rec []byte) error
	// Record takes a record the recorder made: the kernel's text
	// mapping, and the processes that ran before recording began, read
	// from /proc.
	Record(rec perfdata.Record) error
	// EndRound says every record the kernel had written when a drain
	// round began is in: records of different CPUs are in time order
	// within the rounds they came in. r's Tracker then holds the
	// processes and mappings of every round so far, which the round's
	// samples are resolved against, and r's Identity who each process
	// is; both are to be read, not changed, and only during the call.
	EndRound(r *Recorder) error
	// Written is the size of what the Sink has stored, for Progress.
	Written() int64
}

// Recorder drains the rings of an event set into a Sink, round by round,
// and follows what the records say: the processes and mappings (in a
// process.Tracker), who each process is (its user, for the files its
// data names), the images samples hit (for their build-ids), and the
// counts a recording reports. Run uses one to write perf.data; a
// collector gives Stream a Sink of its own.
type Recorder struct {
	sink Sink
	attr *perfdata.Attr
	dec  *perfdata.Decoder
	err  error

	samples, lost uint64
	first, last   uint64 // times of the first and last sample
	// from is when sampling began (CLOCK_MONOTONIC ns, as sample
	// times): the samples the events took before, while /proc was
	// read, are not recorded (begin); 0 when the events began with
	// sampling. began is that time on the clock a duration is timed by.
	from  uint64
	began time.Time

	procs *process.Tracker
	ids   map[uint32]identity
	// toIdentify are the processes this round's records began (a fork),
	// changed (an exec) or first mapped in, in their order: read from
	// /proc at the end of the round (identifyRound).
	toIdentify []toIdentify
	lastOf     map[uint32]int // index of each pid's last in toIdentify
	// hits are the images samples hit, by path, and kernelHit whether
	// one hit the kernel.
	hits      map[string]*hitImage
	kernelHit bool
	pending   []userIP // this round's user-space samples

	// forget says processes are let go of forgetAfter after they
	// exited (Config.ForgetExited); exited are those waiting, in the
	// order they exited.
	forget bool
	exited []exit
}

// exit is a process that exited, and when the recorder learnt it.
type exit struct {
	pid uint32
	at  time.Time
}

// forgetAfter is how long a process that exited is kept: its samples
// can come a round later from another CPU's ring, and a live view keeps
// samples in JIT code waiting for their JIT data up to half a second
// (internal/top).
const forgetAfter = 2 * time.Second

// identity is who a process is, once known: its JIT data files, and the
// images and sources its data names, are judged by it, also after it
// has exited.
type identity struct {
	linux.Identity
	known bool
}

// hitImage is an image a sample hit.
type hitImage struct {
	// as is whose rights its build-id is read with: the user of the
	// first process seen to hit it, when known (trust.OpenNamed).
	as    trust.Cred
	asSet bool
	// pid is that process: one in a mount namespace of its own has its
	// build-id read as it sees the file, in its root.
	pid uint32
}

// toIdentify is a process to read who it is at the end of the round:
// a fork's child starts as its parent ppid.
type toIdentify struct {
	pid, ppid uint32
	fork      bool
}

type userIP struct {
	pid      uint32
	ip, time uint64
}

// newRecorder returns a Recorder of the records of the events of attr,
// noting the images samples hit when hits; its sink is set before it
// drains.
func newRecorder(attr *perfdata.Attr, hits bool) *Recorder {
	dec := perfdata.NewDecoder([]*perfdata.Attr{attr})
	dec.FixedSampleFields = true // a sample's address and time are all it needs
	r := &Recorder{
		attr: attr, dec: dec,
		procs:  process.New(),
		ids:    map[uint32]identity{},
		lastOf: map[uint32]int{},
	}
	if hits {
		r.hits = map[string]*hitImage{}
	}
	return r
}

// Forget forgets process pid, which has exited: its mappings and who it
// was. A collector that runs for weeks calls it, once no sample of the
// process can come any more, so as not to keep every process it saw.
func (r *Recorder) Forget(pid uint32) {
	r.procs.Forget(pid)
	delete(r.ids, pid)
}

// Tracker returns the processes and mappings the Recorder has seen.
func (r *Recorder) Tracker() *process.Tracker { return r.procs }

// Identity returns who process pid was when the recorder last read
// /proc for it (at the end of the round of its first mapping, fork or
// exec), and false when it never could: a collector judges the files a process's JIT data names
// by it (internal/trust), also after the process has exited.
func (r *Recorder) Identity(pid uint32) (linux.Identity, bool) {
	id := r.ids[pid]
	return id.Identity, id.known
}

// progress returns the counts so far.
func (r *Recorder) progress() Progress {
	return Progress{Samples: r.samples, Lost: r.lost, Bytes: r.sink.Written()}
}

// drain drains one round: every record waiting in the set's rings, then
// the end of the round. A corrupt ring loses its unread records and is
// reported; the rest is good.
func (r *Recorder) drain(set *perfevent.EventSet) error {
	if _, err := set.Drain(r.handle); err != nil {
		r.err = errors.Join(r.err, err)
	}
	r.endRound()
	return r.err
}

// endRound ends a round of records.
func (r *Recorder) endRound() {
	r.identifyRound()
	// Samples are matched to images only once the whole round is in: the
	// MMAP2 a sample hit may sit in another CPU's ring, drained later in
	// the round, but never in a later round.
	for _, s := range r.pending {
		r.hit(s)
	}
	r.pending = r.pending[:0]
	if err := r.sink.EndRound(r); err != nil {
		r.fail(err)
	}
	r.forgetExited(time.Now())
}

// forgetExited lets go of the processes that exited forgetAfter before
// now.
func (r *Recorder) forgetExited(now time.Time) {
	n := 0
	for n < len(r.exited) && now.Sub(r.exited[n].at) >= forgetAfter {
		pid := r.exited[n].pid
		r.procs.Forget(pid)
		delete(r.ids, pid)
		n++
	}
	r.exited = r.exited[n:]
}

// fail keeps err when it is the recording's first: a write that fails
// once fails again.
func (r *Recorder) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// record writes a record the recorder made and takes what it says.
func (r *Recorder) record(rec perfdata.Record) {
	if err := r.sink.Record(rec); err != nil {
		r.fail(err)
	}
	r.procs.Take(rec)
}

// handle writes one kernel record and notes what the recording needs of
// it.
func (r *Recorder) handle(raw []byte) {
	rec, err := r.dec.Decode(raw)
	sample := perfdata.RecordType(binary.NativeEndian.Uint32(raw)) == perfdata.RecordSample
	if s, ok := rec.(*perfdata.Sample); ok && err == nil && s.Has(perfdata.SampleTime) && s.Time < r.from {
		return // taken before sampling began
	}
	if err := r.sink.Raw(raw); err != nil {
		r.fail(err)
	}
	if sample {
		r.samples++
	}
	if err != nil {
		return // written as it came; nothing to note
	}
	switch v := rec.(type) {
	case *perfdata.Sample:
		tm := v.Time
		if v.Has(perfdata.SampleTime) {
			if r.first == 0 || tm < r.first {
				r.first = tm
			}
			r.last = max(r.last, tm)
		}
		if !v.Has(perfdata.SampleIP) || !v.Has(perfdata.SampleTID) {
			return
		}
		if v.CPUMode() == perfdata.MiscKernel {
			r.kernelHit = true
			return
		}
		if r.hits != nil {
			r.pending = append(r.pending, userIP{v.PID, v.IP, tm})
		}
	case *perfdata.Mmap:
		r.procs.Take(v)
		if _, ok := r.lastOf[v.PID]; !ok && !r.ids[v.PID].known {
			r.identifyLater(toIdentify{pid: v.PID})
		}
	case *perfdata.Fork:
		r.procs.Take(v)
		if v.PID != v.PPID {
			if r.forget {
				// The pid is another process's now.
				r.exited = slices.DeleteFunc(r.exited, func(e exit) bool { return e.pid == v.PID })
			}
			// A new process, perhaps with the pid of one that has
			// exited. It starts as its parent; /proc says whether it
			// is still.
			r.identifyLater(toIdentify{pid: v.PID, ppid: v.PPID, fork: true})
		}
	case *perfdata.Comm:
		r.procs.Take(v)
		// An exec can change who the process is: su's child execs its
		// user's shell after setuid.
		if v.Exec() {
			r.identifyLater(toIdentify{pid: v.PID})
		}
	case *perfdata.Exit:
		if r.forget && v.PID == v.TID {
			r.exited = append(r.exited, exit{v.PID, time.Now()})
		}
	case *perfdata.Lost:
		r.lost += v.Lost
	}
}

// identifyLater reads who a process is at the end of the round.
func (r *Recorder) identifyLater(e toIdentify) {
	r.lastOf[e.pid] = len(r.toIdentify)
	r.toIdentify = append(r.toIdentify, e)
}

// identifyRound reads who the processes of the round's forks, execs and
// first mappings are, in their order, each once: on a busy machine most
// processes fork and exec in one round, and many exit in it too, and
// reading /proc for each record was half the CPU time of a daemon
// sampling at 19 Hz. Nothing asks who a process is before the round
// ends (the samples' images, the sink's round and what follows).
func (r *Recorder) identifyRound() {
	for i, e := range r.toIdentify {
		if e.fork {
			id := r.ids[e.ppid]
			id.StartTime = 0
			r.ids[e.pid] = id
		}
		if r.lastOf[e.pid] == i {
			r.identify(e.pid)
		}
	}
	r.toIdentify = r.toIdentify[:0]
	clear(r.lastOf)
}

// identify reads who process pid is from /proc, keeping what was known
// when it is gone.
func (r *Recorder) identify(pid uint32) {
	id, err := linux.Host.Identity(int(pid))
	if err != nil {
		return
	}
	r.ids[pid] = identity{id, true}
}

// hit notes the image of a user-space sample, with the rights of the
// first process known to have run it.
func (r *Recorder) hit(s userIP) {
	m := r.procs.Lookup(s.pid, s.ip, s.time, false)
	if m == nil {
		return
	}
	img := r.hits[m.Path]
	id := r.ids[s.pid]
	if img != nil && (img.asSet || !id.known) {
		return
	}
	if img == nil {
		img = &hitImage{}
		r.hits[m.Path] = img
	}
	img.as, img.asSet, img.pid = trust.Unknown, id.known, s.pid
	if id.known {
		img.as = trust.Cred{UID: id.UID, GID: id.GID}
	}
}
