package ingest

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/pypylog"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/jitlog"
	"github.com/jitprof/jitprof/perfdata"
)

// Ingest turns decoded samples into sample-file counts (seed 003's
// transient → sample file): the mapping a sample hit, from the process
// tracker; that mapping's image in the sample database; the offset, and
// in JIT code the sequence number of the code live at the address when
// the sample was taken (seed 000). It is the daemon's hot path: in the
// steady state a sample costs a cached mapping, a cached image and a
// hash-table increment, and allocates nothing.
type Ingest struct {
	db    *sampledb.DB
	procs *process.Tracker
	event sampledb.EventID
	// CallGraph counts the callchain's arcs into {cg} files too.
	CallGraph bool
	// Unwind unwinds, with CallGraph, the user stacks samples carry
	// (--call-graph dwarf) into their chains' user part (dwarf.go), and
	// keeps the unwinding information of JIT code for it.
	Unwind bool
	// UnwoundEarly counts the samples unwound as they came, past the
	// bound on a round's stacks (Keep).
	UnwoundEarly uint64
	// Resync reads a running process's mappings again from /proc when a
	// sample of it falls in no mapping after the kernel lost records
	// (the daemon's: its rings overflow when it falls behind, and a lost
	// MMAP would leave the process's samples in that code unplaced and
	// its stacks there not unwound for as long as it runs). ResyncReads
	// counts the reads of /proc/PID/maps, Resynced those that found
	// mappings. A read is for a sample's own address (not a caller's,
	// which a frame-pointer chain through code without frame pointers
	// can give anywhere), at most once a loss and once a second of
	// sample time a process, and at most maxResyncs a round.
	Resync      bool
	ResyncReads uint64
	Resynced    uint64
	// maps is where resync reads mappings: /proc (linux.Host), or a
	// test's.
	maps      mapsReader
	resyncs   int    // reads in the round resyncRound
	resyncRnd uint64 // the round resyncs counts
	unwinding unwinding
	kept      kept
	// Forget lets go of a process that exited, once no sample of it can
	// come any more: procs's Forget by default; the daemon's is its
	// Recorder's, which forgets who the process was too.
	Forget func(pid uint32)

	files  []sampledb.ImageID // file images by process.Mapping.ID; 0 unknown
	kernel sampledb.ImageID
	pids   map[uint32]*pidState

	// lastPID and lastState cache the process of the last sample.
	lastPID   uint32
	lastState *pidState

	// now is the monotonic clock (tests replace it).
	now func() uint64
	// round counts BeginRound calls: a process's JIT data is read at
	// most once a round for samples its table does not know.
	round  uint64
	exited []uint32 // processes that exited this round
	// exitedBefore exited in the round before: the tracker forgets them
	// at the end of this one.
	exitedBefore []uint32
	// JITErrors keeps the last error of the JIT data of each process
	// followed; pastErrors the last few of processes let go.
	JITErrors  map[uint32]error
	pastErrors []string
	// embedded, when set, fills a process's JIT data from a recording
	// instead of looking for files (Import).
	embedded func(j *jitProc)
	saved    map[uint32]bool // processes whose JIT data is in the session
	// Samples counts the samples added; Unresolved those no mapping
	// held; Errors those the database refused; Lost those the kernel
	// said it lost (Handle).
	Samples, Unresolved, Errors, Lost uint64

	// MaxJITData and MaxJITDataPerProcess bound the JIT data copied into
	// the session (0: DefaultMaxJITData, DefaultMaxJITDataPerProcess).
	MaxJITData, MaxJITDataPerProcess int64
	// JITData is the JIT data in the session: copied, or applied and
	// copied at the next flush. JITBounded counts the processes whose
	// JIT data met a bound in the session.
	JITData    int64
	JITBounded int
	entries    int    // code held in memory, all processes
	jitTables  int64  // bytes of JIT code's unwinding tables, all processes
	budget     budget // the work left for JIT data this round
	fed        uint64 // Import: the time up to which embedded JIT data is applied
	// tsc is the TSC and CLOCK_MONOTONIC read together when the Ingest
	// was made, the first pair of the clock PyPy's logs are read with
	// (tscClock), made again at most once a round with a pair read then.
	tsc     pypylog.Pair
	tscOK   bool
	clock   *pypylog.Clock
	clockAt uint64      // the round of clock
	order   []*pidState // BeginRound's, kept to not allocate it each round
	// timeless counts the processes followed, at the last BeginRound,
	// whose JIT data has no times (Timeless).
	timeless int
}

// maxPastErrors bounds the errors kept of processes let go.
const maxPastErrors = 16

// pidState is what Ingest keeps per process.
type pidState struct {
	app sampledb.ImageID // its executable, 0 until known
	// exe is the executable's path: a new process's first file mapping
	// after its exec, or /proc/PID/exe for one that ran before.
	exe     string
	execing bool // an exec was seen: its next file mapping is exe
	// execAt is the time of the exec (or fork) that gave it exe: the
	// records of a round come CPU by CPU, so a child's exec on one CPU
	// can be taken before its fork on another, which must not undo it.
	execAt uint64
	jit    *jitProc
	// anon are the images of its anonymous mappings by mapping ID.
	anon map[int32]sampledb.ImageID
	// last caches the mapping of the last sample, valid at version
	// for the samples of [from, to): an epoch of the process's address
	// space, in which every address resolves one way.
	last     *process.Mapping
	version  uint64
	from, to uint64
	polled   uint64 // the round its JIT data was last read
	sampled  uint64 // the round it has samples in (Sampled)
	// cred is whose rights its images are read with to unwind its
	// stacks, once credSet (Ingest.cred).
	cred    trust.Cred
	credSet bool
	// resynced is Ingest.Lost when its mappings were last read again
	// (resync): once for each loss; resyncAt the sample time then.
	resynced, resyncAt uint64
}

// mapsReader reads a running process's mappings and start time from
// /proc: linux.Proc's.
type mapsReader interface {
	Maps(pid int) ([]linux.Mapping, error)
	Stat(pid int) (start uint64, state byte, err error)
}

// Bounds on resync's reads of /proc, which run in the drain loop: a
// read of a process of 65,530 mappings costs milliseconds, and losses
// come in bursts.
const (
	maxResyncs  = 4                   // reads a round, all processes
	resyncEvery = uint64(time.Second) // sample time between a process's reads
)

// NewIngest returns an Ingest of samples of event ev into db, with the
// processes of procs.
func New(db *sampledb.DB, procs *process.Tracker, ev sampledb.EventID) *Ingest {
	in := &Ingest{db: db, procs: procs, maps: linux.Host, Forget: procs.Forget, event: ev, pids: map[uint32]*pidState{}, now: monotonic, JITErrors: map[uint32]error{}, saved: map[uint32]bool{}}
	tsc, ns, ok := jitlog.TSCPair()
	in.tsc, in.tscOK = pypylog.Pair{Tick: tsc, Nanos: ns}, ok
	return in
}

// tscClock is the clock of PyPy's TSC stamps: as jitprof record makes
// it, from pairs of TSC and CLOCK_MONOTONIC readings, the Ingest's first
// and one read now (a new one each round); nil without a TSC, or while
// the two are too close to give a rate.
func (in *Ingest) tscClock() *pypylog.Clock {
	if !in.tscOK || in.clockAt == in.round && in.clock != nil {
		return in.clock
	}
	tsc, ns, _ := jitlog.TSCPair()
	if c, err := pypylog.NewClock([]pypylog.Pair{in.tsc, {Tick: tsc, Nanos: ns}}); err == nil {
		in.clock, in.clockAt = c, in.round
	}
	return in.clock
}

func monotonic() uint64 { return uint64(nanotime()) }

// pid returns the state of process pid.
func (in *Ingest) pid(pid uint32) *pidState {
	if in.lastState != nil && in.lastPID == pid {
		return in.lastState
	}
	st := in.pids[pid]
	if st == nil {
		st = &pidState{anon: map[int32]sampledb.ImageID{}, jit: &jitProc{pid: pid}}
		in.pids[pid] = st
	}
	in.lastPID, in.lastState = pid, st
	return st
}

// Add counts one sample.
func (in *Ingest) Add(s *perfdata.Sample) { in.add(s) }

// add is Add, returning the callchain whose arcs were counted: the
// sample's own, or with Unwind the one unwound from its user stack
// (valid until the next add); and the mapping its address fell in (nil
// in the kernel or in none).
func (in *Ingest) add(s *perfdata.Sample) ([]uint64, *process.Mapping) {
	in.Samples++
	st := in.pid(s.PID)
	var smp sampledb.Sample
	smp.Event, smp.TGID, smp.TID, smp.CPU = in.event, s.PID, s.TID, s.CPU
	kernel := s.CPUMode() == perfdata.MiscKernel
	if !in.place(st, s.PID, s.IP, s.Time, kernel, true, &smp.Image, &smp.Key1, &smp.Key2) {
		in.Unresolved++
		return s.Callchain, nil
	}
	var m *process.Mapping
	if !kernel {
		m = st.last // place's, before arcs places the callers
	}
	smp.App = in.app(st, s.PID)
	if in.db.Add(&smp) != nil {
		in.Errors++
	}
	if !in.CallGraph {
		return s.Callchain, m
	}
	chain := s.Callchain
	if in.Unwind {
		chain = in.unwindChain(s)
	}
	if len(chain) > 0 {
		in.arcs(st, s, chain, &smp)
	}
	return chain, m
}

// place finds the image and the keys of addr in process pid at time t;
// resync says that addr is a sample's own, worth reading the process's
// mappings again for (resync).
func (in *Ingest) place(st *pidState, pid uint32, addr, t uint64, kernel, resync bool, image *sampledb.ImageID, k1, k2 *uint64) bool {
	if kernel {
		if in.kernel == 0 {
			id, err := in.db.KernelImage("vmlinux", sampledb.ImageInfo{})
			if err != nil {
				return false
			}
			in.kernel = id
		}
		// Kernel addresses are kept whole: kallsyms names them.
		*image, *k1, *k2 = in.kernel, addr, 0
		return true
	}
	m := st.last
	// The last sample's mapping is another time's, the one it held then
	// when the process mapped something over it in the round (an exec
	// at the same addresses): it holds at this one only in the epoch of
	// the process's address space it was found in.
	if in.procs.Version() != st.version || t < st.from || t >= st.to {
		m = nil
	}
	if m == nil || addr < m.Start || addr >= m.End {
		if m = in.procs.Lookup(pid, addr, t, false); m == nil && resync && in.resync(st, pid, t) {
			m = in.procs.Lookup(pid, addr, t, false)
		}
		if m == nil {
			return false
		}
		if v := in.procs.Version(); v != st.version || t < st.from || t >= st.to {
			sp := in.procs.Epoch(pid, t)
			st.version, st.from, st.to = v, sp.From, sp.To
		}
		st.last = m
	}
	if m.Anon {
		return in.placeAnon(st, pid, m, addr, t, image, k1, k2)
	}
	id := in.fileImage(m)
	if id == 0 {
		return false
	}
	*image, *k1, *k2 = id, addr-m.Start+m.Pgoff, 0
	return true
}

// resync reads the executable mappings of process pid from /proc again,
// when records were lost since it last did, and tells the tracker of
// those it does not know at time t (a sample's, which fell in none):
// from then on, as the kernel's MMAP records would have. It reports
// whether it found any. A process that started after t is another with
// the pid (they are reused fast in the fork storms that lose records):
// its mappings are not the sample's.
func (in *Ingest) resync(st *pidState, pid uint32, t uint64) bool {
	if !in.Resync || in.Lost <= st.resynced || st.resyncAt != 0 && t < st.resyncAt+resyncEvery {
		return false
	}
	if in.resyncRnd != in.round {
		in.resyncRnd, in.resyncs = in.round, 0
	}
	if in.resyncs >= maxResyncs {
		return false // the next round's sample of it may
	}
	in.resyncs++
	st.resynced, st.resyncAt = in.Lost, max(t, 1)
	if start, _, err := in.maps.Stat(int(pid)); err != nil || startMonotonic(start) > t {
		return false
	}
	in.ResyncReads++
	maps, err := in.maps.Maps(int(pid))
	if err != nil {
		return false
	}
	found := false
	for _, lm := range maps {
		if lm.Prot&unix.PROT_EXEC == 0 || in.procs.Lookup(pid, lm.Start, t, false) != nil {
			continue
		}
		m := process.FromMmap(&perfdata.Mmap{Common: perfdata.Common{Misc: perfdata.MiscUser, PID: pid, TID: pid}, Version2: true, PID: pid, TID: pid,
			Addr: lm.Start, Len: lm.End - lm.Start, Pgoff: lm.Pgoff, Maj: lm.Major, Min: lm.Minor, Ino: lm.Inode, Prot: lm.Prot, Flags: lm.Flags, Filename: lm.Path})
		m.Time = t
		in.procs.Map(m)
		found = true
	}
	if found {
		in.Resynced++
	}
	return found
}

func (in *Ingest) fileImage(m *process.Mapping) sampledb.ImageID {
	if int(m.ID) < len(in.files) {
		if id := in.files[m.ID]; id != 0 {
			return id
		}
	}
	var info sampledb.ImageInfo
	if m.BuildID != "" {
		info.BuildID, _ = hex.DecodeString(m.BuildID)
	}
	var id sampledb.ImageID
	var err error
	if m.Path == sampledb.VDSOName {
		id, err = in.db.VDSOImage(info)
	} else {
		id, err = in.db.FileImage(sampledb.FileIdent{}, m.Path, info)
	}
	if err != nil {
		return 0
	}
	for int(m.ID) >= len(in.files) {
		in.files = append(in.files, 0)
	}
	in.files[m.ID] = id
	return id
}

// placeAnon places a sample in anonymous memory: in the {jit:HANDLER}
// image of its mapping, keyed (offset, sequence number), when the
// process has JIT data; else in its {anon:NAME} image.
func (in *Ingest) placeAnon(st *pidState, pid uint32, m *process.Mapping, addr, t uint64, image *sampledb.ImageID, k1, k2 *uint64) bool {
	j := st.jit
	if j.handler == "" {
		found := false
		if in.embedded != nil {
			if !j.noFiles {
				in.embedded(j)
				in.JITData += j.added
				in.entries += j.entries()
				in.jitTables += j.code.tableBytes
				in.feed(st)
			}
			found = j.handler != ""
		} else {
			var err error
			found, err = j.find(time.Now(), in.mappings)
			in.jitError(j, err)
		}
		if found {
			clear(st.anon) // its anonymous images become JIT images
			in.pollJIT(st)
		}
	}
	id := st.anon[m.ID]
	if id == 0 {
		var err error
		if j.handler != "" {
			id, err = in.db.JITImage(j.handler, pid, m.Start, m.End)
		} else {
			// Nothing names this process's anonymous code: its samples
			// are the application's, one place, and make no file of
			// the process's (a file per short-lived process filled
			// sessions).
			id, err = in.db.AppAnonImage(anonName(m.Path))
		}
		if err != nil {
			return false
		}
		st.anon[m.ID] = id
	}
	*image, *k1, *k2 = id, 0, 0
	if j.handler != "" {
		*k1 = addr - m.Start
		seq, ok := j.code.lookup(addr, t)
		if !ok && st.polled != in.round {
			// Code newer than the last poll: read what the JIT added.
			in.pollJIT(st)
			seq, _ = j.code.lookup(addr, t)
		}
		*k2 = seq
	}
	return true
}

// anonName is the name of an anonymous mapping in a sample file name:
// OProfile's "anon", or the name the kernel shows ([heap], [anon:NAME]).
func anonName(p string) string {
	switch {
	case p == "" || p == "//anon":
		return "anon"
	case p[0] == '[':
		return p
	}
	return path.Base(p)
}

func (in *Ingest) mappings(pid uint32) []anon.Mapping {
	p, ok := in.procs.Process(pid)
	if !ok {
		return nil
	}
	ms := make([]anon.Mapping, len(p.Mappings))
	for i, m := range p.Mappings {
		ms[i] = anon.MappingOf(m)
	}
	return ms
}

// app returns the image of process pid's executable, 0 while unknown.
func (in *Ingest) app(st *pidState, pid uint32) sampledb.ImageID {
	if st.app != 0 || st.exe == "" {
		return st.app
	}
	id, err := in.db.FileImage(sampledb.FileIdent{}, st.exe, sampledb.ImageInfo{})
	if err == nil {
		st.app = id
	}
	return st.app
}

// arcs counts the arcs of s's callchain, caller to callee, into {cg}
// files; an end in JIT code keeps the sequence number of the code live
// there.
func (in *Ingest) arcs(st *pidState, s *perfdata.Sample, chain []uint64, leaf *sampledb.Sample) {
	callee, calleeKey := leaf.Image, arcEnd(st, leaf)
	kernel := s.CPUMode() == perfdata.MiscKernel
	first := true
	for _, ip := range chain {
		if ip >= resolve.ContextMax {
			switch ip {
			case resolve.ContextKernel:
				kernel = true
			case resolve.ContextUser:
				kernel = false
			default:
				return
			}
			continue
		}
		if first {
			first = false
			if ip == s.IP {
				continue
			}
		}
		var caller sampledb.Sample
		if !in.place(st, s.PID, ip, s.Time, kernel, false, &caller.Image, &caller.Key1, &caller.Key2) {
			return
		}
		arc := sampledb.Sample{Event: in.event, App: leaf.App, Image: caller.Image, CGTo: callee,
			TGID: s.PID, TID: s.TID, CPU: s.CPU, Key1: arcEnd(st, &caller), Key2: calleeKey}
		if in.db.Add(&arc) != nil {
			in.Errors++
		}
		callee, calleeKey = caller.Image, arc.Key1
	}
}

// arcEnd is the arc key of a place just found by place: its offset, and
// in JIT code the sequence number, packed within the range of the
// mapping that place left in st.last (sampledb.ArcEnd).
func arcEnd(st *pidState, p *sampledb.Sample) uint64 {
	if p.Key2 == 0 {
		return p.Key1 // a file, the kernel, or code no JIT data knew
	}
	return sampledb.ArcEnd(p.Key1, p.Key2, st.last.End-st.last.Start)
}

// Sampled says process pid has samples in the round about to begin:
// its JIT data is read before that of processes without.
func (in *Ingest) Sampled(pid uint32) {
	if st := in.pids[pid]; st != nil {
		st.sampled = in.round + 1
	}
}

// BeginRound reads what every followed JIT added since the last round,
// before the round's samples are counted, within the round's work:
// first the JIT data of processes with samples in the round (those
// that kept up first, so that a user flooding their own data does not
// leave another's samples keyed by code that is gone), then the rest.
func (in *Ingest) BeginRound() {
	in.round++
	in.budget.refill(in.now())
	in.order = in.order[:0]
	in.timeless = 0
	for _, st := range in.pids {
		if st.jit.handler != "" {
			in.order = append(in.order, st)
		}
		if st.jit.handler == "perfmap" {
			in.timeless++
		}
	}
	rank := func(st *pidState) int {
		r := 0
		if st.sampled != in.round {
			r += 2
		}
		if st.jit.behind {
			r++
		}
		return r
	}
	slices.SortFunc(in.order, func(a, b *pidState) int { return rank(a) - rank(b) })
	for _, st := range in.order {
		in.pollJIT(st)
	}
	clear(in.order)
}

// Timeless reports whether a process followed, at the start of the last
// round, names its JIT code without times: a perf map, whose lines are
// stamped when a round reads them, after the round's samples. A piece
// of code a JIT put in place of another at one address is named as the
// one before it in the samples of the round it was written in: the
// shorter the rounds, the fewer (the daemon's are 100 ms then).
func (in *Ingest) Timeless() bool { return in.timeless > 0 }

// pollJIT reads what the process's JIT added, with a share of the
// round's work and within the room the bounds leave it.
func (in *Ingest) pollJIT(st *pidState) {
	st.polled = in.round
	j := st.jit
	if in.budget.left.done() {
		return
	}
	share := in.budget.share()
	left := share
	if j.handler == "pypy" && in.embedded == nil {
		j.clock = in.tscClock()
	}
	added, entries, tables := j.added, j.entries(), j.code.tableBytes
	err := j.poll(in.now(), &left, in.room(j), func() (*os.Root, error) { return in.jitDir(j) })
	in.budget.spend(share, left)
	// Work left undone means the process is behind if the round's work
	// ran out before its data did.
	j.behind = left.done()
	in.JITData += j.added - added
	in.entries += j.entries() - entries
	in.jitTables += j.code.tableBytes - tables
	in.jitError(j, err)
	if j.handler == "" {
		clear(st.anon) // a source given up: its images are anonymous again
	}
}

// jitError keeps the error of a process's JIT data.
func (in *Ingest) jitError(j *jitProc, err error) {
	if err == nil {
		return
	}
	var was, is *errBound
	if !errors.As(in.JITErrors[j.pid], &was) && errors.As(err, &is) {
		in.JITBounded++
	}
	in.JITErrors[j.pid] = err
}

// feedTo applies the JIT data recordings embedded up to time t (Import).
func (in *Ingest) feedTo(t uint64) {
	in.fed = t
	for _, st := range in.pids {
		in.feed(st)
	}
}

func (in *Ingest) feed(st *pidState) {
	j := st.jit
	if j.feed == nil {
		return
	}
	entries, tables := j.entries(), j.code.tableBytes
	room := in.room(j)
	j.code.limit, j.code.tableLimit = max(room.entries, 1), room.tables
	if !j.feed(in.fed) {
		j.feed = nil
		if j.code.full {
			err := boundErr("%s: more than %d pieces of JIT code", j.path, j.code.limit)
			in.jitError(j, err)
			j.bound = err
		}
	}
	in.entries += j.entries() - entries
	in.jitTables += j.code.tableBytes - tables
}

// room is what the bounds leave process j.
func (in *Ingest) room(j *jitProc) jitRoom {
	r := jitRoom{
		bytes: in.maxJITDataPerProcess() - j.added, bytesWhy: "--max-jit-data-per-process " + mib(in.maxJITDataPerProcess()),
		entries: maxEntriesPerProcess, entriesWhy: "the bound of a process",
	}
	if s := in.maxJITData() - in.JITData; s < r.bytes {
		r.bytes, r.bytesWhy = s, "--max-jit-data "+mib(in.maxJITData())+" for the session"
	}
	if e := maxEntries - (in.entries - j.entries()); e < r.entries {
		r.entries, r.entriesWhy = e, "the daemon's bound"
	}
	if in.Unwind {
		r.tables = min(maxJITTablesPerProcess, maxJITTables-(in.jitTables-j.code.tableBytes))
	}
	return r
}

func (in *Ingest) maxJITData() int64 {
	if in.MaxJITData > 0 {
		return in.MaxJITData
	}
	return DefaultMaxJITData
}

func (in *Ingest) maxJITDataPerProcess() int64 {
	if in.MaxJITDataPerProcess > 0 {
		return in.MaxJITDataPerProcess
	}
	return DefaultMaxJITDataPerProcess
}

// jitDir is process j's directory in the session.
func (in *Ingest) jitDir(j *jitProc) (*os.Root, error) {
	if j.dir == nil {
		d, err := in.db.JITRoot(int(j.pid))
		if err != nil {
			return nil, err
		}
		j.dir = d
	}
	return j.dir, nil
}

// Take follows what a side-band record says of a process's executable
// and life: an exec begins a new image and new JIT data; a fork inherits
// its parent's executable; an exit, once the round's samples are
// counted (EndRound), lets go of the process.
func (in *Ingest) Take(rec perfdata.Record) {
	switch r := rec.(type) {
	case *perfdata.Comm:
		if r.Exec() && r.PID == r.TID {
			t := r.Timestamp()
			if st := in.pids[r.PID]; st != nil && st.execAt > t {
				break // a later exec was taken already
			}
			in.reset(r.PID)
			st := in.pid(r.PID)
			st.execing, st.execAt = true, t
		}
	case *perfdata.Mmap:
		if st := in.pids[r.PID]; st != nil && st.execing && !r.IsAnon() && r.CPUMode() != perfdata.MiscKernel {
			st.exe, st.execing = r.Filename, false
		}
	case *perfdata.Fork:
		if r.PID != r.PPID {
			exited := in.revive(r.PID)
			if st := in.pids[r.PID]; st != nil && st.execAt > r.ForkTime {
				break // the child's exec, later, was taken first
			}
			if exited {
				in.reset(r.PID) // the pid's last process, kept for its late samples
			}
			if parent := in.pids[r.PPID]; parent != nil && parent.exe != "" {
				in.reset(r.PID)
				st := in.pid(r.PID)
				st.exe, st.execAt = parent.exe, r.ForkTime
			}
		}
	case *perfdata.Exit:
		if r.PID == r.TID {
			in.exited = append(in.exited, r.PID)
		}
	}
}

// SetExe says which executable a process that ran before the daemon
// runs (/proc/PID/exe), unless its records said already.
func (in *Ingest) SetExe(pid uint32, exe string) {
	if st := in.pid(pid); exe != "" && st.exe == "" && !st.execing {
		st.exe = exe
	}
}

// reset forgets a process's images and JIT data (an exec, or a pid
// reused), copying its JIT data into the session first.
func (in *Ingest) reset(pid uint32) {
	st := in.pids[pid]
	if st == nil {
		return
	}
	all := int64(math.MaxInt64)
	in.saveJIT(st, &all)
	in.entries -= st.jit.entries()
	in.jitTables -= st.jit.code.tableBytes
	st.jit.close()
	if err := in.JITErrors[pid]; err != nil {
		if len(in.pastErrors) == maxPastErrors {
			in.pastErrors = in.pastErrors[1:]
		}
		in.pastErrors = append(in.pastErrors, fmt.Sprintf("pid %d (exited): %v", pid, err))
		delete(in.JITErrors, pid)
	}
	delete(in.pids, pid)
	if in.lastPID == pid {
		in.lastState = nil
	}
	in.db.ForgetProcess(pid)
}

// revive takes pid, forked anew, off the lists of processes that exited,
// and says whether it was on one: the pid is another process's now.
func (in *Ingest) revive(pid uint32) bool {
	n := len(in.exited) + len(in.exitedBefore)
	drop := func(l []uint32) []uint32 { return slices.DeleteFunc(l, func(p uint32) bool { return p == pid }) }
	in.exited, in.exitedBefore = drop(in.exited), drop(in.exitedBefore)
	return len(in.exited)+len(in.exitedBefore) < n
}

// EndRound lets go of the processes that exited in the round before,
// their images and JIT data and the tracker's mappings: a sample of
// another CPU can come a round after the exit (its ring drained before
// the exit was written to the exiting CPU's, the sample written after),
// and must find the code the process ran, not a process begun anew
// with no JIT data (the last tens of milliseconds of a JIT's run, when
// the daemon's drain of one ring is slow, came unnamed). A daemon that
// runs for weeks must not keep every process it ever saw.
func (in *Ingest) EndRound() {
	in.boundUnwinder()
	for _, pid := range in.exitedBefore {
		in.reset(pid)
		in.Forget(pid)
	}
	in.exitedBefore = append(in.exitedBefore[:0], in.exited...)
	in.exited = in.exited[:0]
}

// saveJIT copies what a process's JIT data gained into the session, at
// most *left bytes of it.
func (in *Ingest) saveJIT(st *pidState, left *int64) {
	j := st.jit
	if j.handler == "" {
		return
	}
	if j.handler != "perfmap" && st.polled != in.round {
		// The last records, before the copy that the report reads.
		in.pollJIT(st)
	}
	err := j.save(func() (*os.Root, error) { return in.jitDir(j) }, left)
	if err == nil {
		in.saved[j.pid] = true
	}
	in.jitError(j, err)
}

// SaveJIT copies what the JIT data of every process gained into the
// session, at most copyPerFlush bytes: at each flush, so reports work
// after /tmp is cleaned.
func (in *Ingest) SaveJIT() {
	left := int64(copyPerFlush)
	for _, st := range in.pids {
		in.saveJIT(st, &left)
	}
}

// SaveAllJIT copies all the JIT data not yet in the session: at the end.
func (in *Ingest) SaveAllJIT() {
	left := int64(math.MaxInt64)
	for _, st := range in.pids {
		in.saveJIT(st, &left)
	}
}

// JITErrorList lists the errors of the processes' JIT data: those followed,
// by pid, then the last few of processes let go.
func (in *Ingest) JITErrorList() []string {
	var l []string
	for pid, err := range in.JITErrors {
		l = append(l, fmt.Sprintf("pid %d: %v", pid, err))
	}
	slices.Sort(l)
	return append(l, in.pastErrors...)
}

// PyPyDump returns the numbered dump of process pid's PyPy log in the
// current session (anon.PyPySeq), and its path: the loops and bridges
// the daemon read of the log, each named as a report of the session
// names it and loaded at its time. It stays after the process exits,
// until the session changes; an error wrapping fs.ErrNotExist says the
// session has none of pid's.
func (in *Ingest) PyPyDump(pid uint32) ([]byte, string, error) {
	b, err := in.db.ReadJIT(int(pid), pypySeqFile, in.maxJITDataPerProcess())
	if err != nil {
		return nil, "", err
	}
	return b, filepath.Join(sampledb.JITDir(in.db.Dir(), sampledb.Current, int(pid)), pypySeqFile), nil
}

// JITProcesses counts the processes whose JIT data the daemon follows.
func (in *Ingest) JITProcesses() int {
	n := 0
	for _, st := range in.pids {
		if st.jit.handler != "" {
			n++
		}
	}
	return n
}

// Close closes the JIT data files.
func (in *Ingest) Close() {
	for _, st := range in.pids {
		st.jit.close()
	}
}

// SessionChanged says the DB began a new current session (reset or
// save): every followed JIT's data is copied into it again, from its
// start; a perf map is read again from its start, its ranges numbered
// anew in the new session's numbered dump.
func (in *Ingest) SessionChanged() {
	in.JITData, in.JITBounded = 0, 0
	for _, st := range in.pids {
		j := st.jit
		if j.handler == "" {
			continue
		}
		j.closeSession()
		var b *errBound
		if errors.As(j.bound, &b) {
			if j.handler == "perfmap" || j.handler == "pypy" {
				j.bound = nil // the new session has room for it again
			} else {
				in.JITBounded++ // followed no more, but copied again
			}
		}
		if j.handler == "perfmap" || j.handler == "pypy" && j.f != nil {
			in.entries -= j.entries()
			j.ranges, j.code = nil, codeTable{}
			// A log's unended line is read again with the rest.
			j.off, j.skip, j.sweep, j.snap, j.added, j.partial = 0, false, false, j.snap+1, 0, false
			if j.handler == "pypy" {
				// The log read again from its start, its code numbered
				// anew in the new session's dump.
				j.pypy = pypylog.NewFollower()
			}
			delete(in.JITErrors, j.pid)
			continue
		}
		j.added = j.off
		in.JITData += j.added
	}
}
