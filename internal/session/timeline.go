package session

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/jitprof/jitprof/perfdata"
)

// Mapping is one mapping of a process (or of the kernel).
type Mapping struct {
	ID         int32 // index in Timeline.Mappings
	PID        uint32
	Start, End uint64
	Pgoff      uint64
	Path       string
	BuildID    string // hex, from MMAP2 or the BUILD_ID feature
	Time       uint64 // when it was mapped
	Anon       bool   // anonymous memory: JIT code when Exec
	Kernel     bool
	// Exec says the mapping is executable. Only executable mappings
	// resolve samples; the others are kept for Processes.
	Exec bool
}

// Process is what a recording says about one pid.
type Process struct {
	PID  uint32
	Comm string // the last name the process had
	// Mappings are all its mappings, executable or not, across execs,
	// in time order.
	Mappings []*Mapping
}

// generation is one address space a pid had: a process from its fork or
// exec until the next exec or reuse of the pid.
type generation struct {
	pid    uint32
	start  uint64
	parent *generation // fork parent, or the image replaced by exec
	forked uint64      // when it forked from parent or exec'd
	maps   []*Mapping  // sorted by Start
	maxEnd []uint64    // maxEnd[i] is the largest End of maps[:i+1]
	// changes are the times, sorted, at which what Lookup finds in the
	// generation can change: when its or its ancestors' mappings appeared.
	changes []uint64
	seen    bool // changes is computed
}

// genStart is a FORK or exec COMM, kept until finish: records of
// different CPUs interleave in the file (a child's exec may come before
// its fork), so generations are made and linked in time order.
type genStart struct {
	pid, ppid uint32
	time      uint64
	exec      bool
}

type commChange struct {
	time uint64
	comm string
}

// Timeline is the process and mapping history of a recording.
type Timeline struct {
	Mappings []*Mapping
	gens     map[uint32][]*generation // by pid, in start order
	starts   []genStart
	procs    map[uint32]*Process
	lost     uint64 // samples lost, from LOST and LOST_SAMPLES records
	kernel   generation
	comms    map[uint32][]commChange // by tid
	threads  map[uint32]threadFork   // tid -> parent thread at creation
	buildIDs map[string]string       // path -> build-id
	// tchanges are, by tid, the times at which Comm's answer for the
	// thread can change: its and its creators' renames and forks.
	tchanges map[uint32][]uint64
	// bounds are the offsets of the non-sample records, where the data
	// can be split for reading in parallel.
	bounds []int64
}

type threadFork struct {
	ptid uint32
	time uint64
}

const pidKernel = ^uint32(0)

func newTimeline(f *perfdata.File) *Timeline {
	t := &Timeline{
		gens:     map[uint32][]*generation{},
		procs:    map[uint32]*Process{},
		comms:    map[uint32][]commChange{},
		threads:  map[uint32]threadFork{},
		buildIDs: map[string]string{},
	}
	if ids, err := f.Features.BuildIDs(); err == nil {
		for _, b := range ids {
			t.buildIDs[b.Filename] = fmt.Sprintf("%x", b.ID)
		}
	}
	return t
}

func recTime(c *perfdata.Common) uint64 {
	if c.Has(perfdata.SampleTime) {
		return c.Time
	}
	return 0
}

// gen returns the generation of pid at time; when pid has none it makes
// one if create is set and otherwise returns nil.
func (t *Timeline) gen(pid uint32, time uint64, create bool) *generation {
	if pid == pidKernel {
		return &t.kernel
	}
	gs := t.gens[pid]
	for i := len(gs) - 1; i >= 0; i-- {
		if gs[i].start <= time {
			return gs[i]
		}
	}
	if len(gs) > 0 {
		// A record older than the first known start (synthesized
		// records carry time 0): it belongs to the first generation.
		return gs[0]
	}
	if !create {
		return nil
	}
	g := &generation{pid: pid}
	t.gens[pid] = []*generation{g}
	return g
}

// newGen starts a generation of s.pid at s.time; generations are made
// in time order, so the parent's is already there.
func (t *Timeline) newGen(s genStart) {
	var parent *generation
	if s.exec {
		// Until the exec returns, samples in it carry the old
		// image's user addresses (libc's execve): like perf, which
		// keeps a thread's maps across an exec, resolve what the new
		// image does not map against the old one.
		if g := t.gen(s.pid, s.time, false); g != nil && g.start <= s.time {
			parent = g
		}
	} else {
		parent = t.gen(s.ppid, s.time, true)
	}
	g := &generation{pid: s.pid, start: s.time, parent: parent, forked: s.time}
	t.gens[s.pid] = append(t.gens[s.pid], g)
}

// takes reports whether take keeps anything of rec.
func takes(rec perfdata.Record) bool {
	switch rec.(type) {
	case *perfdata.Mmap, *perfdata.Comm, *perfdata.Fork, *perfdata.Lost, *perfdata.LostSamples:
		return true
	}
	return false
}

// take takes what the timeline keeps of one non-sample record: the
// processes and mappings, and the samples lost.
func (t *Timeline) take(rec perfdata.Record) {
	switch r := rec.(type) {
	case *perfdata.Mmap, *perfdata.Comm, *perfdata.Fork:
		t.add(rec)
	case *perfdata.Lost:
		t.lost += r.Lost
	case *perfdata.LostSamples:
		t.lost += r.Lost
	}
}

// add takes one process or mapping record into the timeline.
func (t *Timeline) add(rec perfdata.Record) {
	switch r := rec.(type) {
	case *perfdata.Mmap:
		m := &Mapping{
			ID: int32(len(t.Mappings)), PID: r.PID,
			Start: r.Addr, End: r.Addr + r.Len, Pgoff: r.Pgoff,
			Path: r.Filename, Time: recTime(&r.Common),
			Kernel: r.PID == pidKernel || r.CPUMode() == perfdata.MiscKernel,
		}
		if m.Kernel {
			m.PID = pidKernel
		}
		if len(r.BuildID) > 0 {
			m.BuildID = fmt.Sprintf("%x", r.BuildID)
		} else {
			m.BuildID = t.buildIDs[r.Filename]
		}
		m.Anon = !m.Kernel && r.IsAnon()
		m.Exec = r.Misc&perfdata.MiscMmapData == 0 &&
			(!r.Version2 || r.Prot == 0 || r.Prot&0x4 != 0) // PROT_EXEC
		if m.Anon && m.Exec {
			m.Pgoff = 0
		}
		t.Mappings = append(t.Mappings, m)
		if !m.Kernel {
			p := t.proc(m.PID)
			p.Mappings = append(p.Mappings, m)
		}
	case *perfdata.Comm:
		tm := recTime(&r.Common)
		t.proc(r.PID)
		if r.Exec() {
			t.starts = append(t.starts, genStart{pid: r.PID, time: tm, exec: true})
		}
		t.comms[r.TID] = append(t.comms[r.TID], commChange{tm, r.Comm})
	case *perfdata.Fork:
		tm := recTime(&r.Common)
		if tm == 0 {
			tm = r.ForkTime
		}
		if r.PID != r.PPID {
			t.proc(r.PID)
			t.starts = append(t.starts, genStart{pid: r.PID, ppid: r.PPID, time: tm})
		}
		t.threads[r.TID] = threadFork{r.PTID, tm}
	}
}

func (t *Timeline) proc(pid uint32) *Process {
	p := t.procs[pid]
	if p == nil {
		p = &Process{PID: pid}
		t.procs[pid] = p
	}
	return p
}

// Processes returns every process the recording names, by pid.
func (t *Timeline) Processes() []Process {
	out := make([]Process, 0, len(t.procs))
	for _, p := range t.procs {
		q := *p
		q.Comm = t.Comm(p.PID, p.PID, ^uint64(0))
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// finish sorts what add collected; the timeline is read-only afterwards.
func (t *Timeline) finish() {
	sort.SliceStable(t.starts, func(i, j int) bool { return t.starts[i].time < t.starts[j].time })
	for _, s := range t.starts {
		t.newGen(s)
	}
	t.starts = nil
	for _, m := range t.Mappings {
		if m.Exec {
			g := t.gen(m.PID, m.Time, true)
			g.maps = append(g.maps, m)
		}
	}
	fin := func(g *generation) {
		sort.SliceStable(g.maps, func(i, j int) bool { return g.maps[i].Start < g.maps[j].Start })
		g.maxEnd = make([]uint64, len(g.maps))
		var me uint64
		for i, m := range g.maps {
			me = max(me, m.End)
			g.maxEnd[i] = me
		}
	}
	fin(&t.kernel)
	for _, gs := range t.gens {
		for _, g := range gs {
			fin(g)
		}
	}
	t.kernel.computeChanges()
	for _, gs := range t.gens {
		for _, g := range gs {
			g.computeChanges()
		}
	}
	for _, cs := range t.comms {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].time < cs[j].time })
	}
	t.tchanges = map[uint32][]uint64{}
	for tid := range t.comms {
		t.threadChanges(tid)
	}
	for tid := range t.threads {
		t.threadChanges(tid)
	}
	for _, p := range t.procs {
		sort.SliceStable(p.Mappings, func(i, j int) bool { return p.Mappings[i].Time < p.Mappings[j].Time })
	}
}

// BuildTimeline reads the process and mapping records of a recording
// into a Timeline, for callers that need the processes before Load
// (to choose JIT handlers per process); pass it to Load in
// Options.Timeline so the file's records are not read twice for it.
func BuildTimeline(f *perfdata.File) (*Timeline, error) {
	return buildTimeline(f, nil)
}

// buildTimeline reads the timeline and counts lost samples, reporting
// progress as the first half of a two-pass read.
func buildTimeline(f *perfdata.File, progress func(done, total int64)) (*Timeline, error) {
	if f.Pipe {
		return nil, errors.New("session: a stream's timeline comes with its samples, in the one pass Load makes (see Options.Bind)")
	}
	tl := newTimeline(f)
	total := f.DataSize * 2
	r := f.Records()
	// The samples are read later, in parts: keep only those parts in
	// memory.
	rel := releaser{f: f, at: f.DataOffset}
	for n := 0; r.NextNonSample(); n++ {
		off := r.Offset()
		tl.bounds = append(tl.bounds, off)
		rel.readTo(off)
		tl.take(r.Record())
		if progress != nil && n&0xffff == 0 {
			progress(r.Offset()-f.DataOffset, total)
		}
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	tl.finish()
	rel.finish(f.DataOffset + f.DataSize)
	return tl, nil
}

// chunks splits the data section of f, whose timeline t is, into at most
// n parts of about equal size at record boundaries.
func (t *Timeline) chunks(f *perfdata.File, n int) []perfdata.Chunk {
	start, end := f.DataOffset, f.DataOffset+f.DataSize
	var out []perfdata.Chunk
	for i := 1; i < n; i++ {
		target := f.DataOffset + f.DataSize*int64(i)/int64(n)
		j, _ := slices.BinarySearch(t.bounds, target)
		if j == len(t.bounds) {
			break
		}
		if b := t.bounds[j]; b > start {
			out = append(out, perfdata.Chunk{Start: start, End: b})
			start = b
		}
	}
	return append(out, perfdata.Chunk{Start: start, End: end})
}

// computeChanges fills g.changes: its mappings' times and, as Lookup
// falls back to the parent as it was at the fork, the parent's changes
// up to then.
func (g *generation) computeChanges() {
	if g.seen {
		return
	}
	g.seen = true
	for _, m := range g.maps {
		g.changes = append(g.changes, m.Time)
	}
	if p := g.parent; p != nil {
		p.computeChanges()
		for _, c := range p.changes {
			if c <= g.forked {
				g.changes = append(g.changes, c)
			}
		}
	}
	slices.Sort(g.changes)
	g.changes = slices.Compact(g.changes)
}

// epoch numbers the spans of time in which every user address of pid
// resolves the same way: equal epochs, equal answers from Lookup.
func (t *Timeline) epoch(pid uint32, time uint64) uint64 {
	gs := t.gens[pid]
	if pid == pidKernel {
		gs = []*generation{&t.kernel}
	}
	if len(gs) == 0 {
		return 0
	}
	i := len(gs) - 1
	for i > 0 && gs[i].start > time {
		i-- // as gen does
	}
	g := gs[i]
	n := sort.Search(len(g.changes), func(j int) bool { return g.changes[j] > time })
	return uint64(i)<<32 | uint64(n)
}

// lookup finds the mapping of g holding addr at time: of those mapped by
// then, the latest, since a new mapping replaces what it overlaps.
func (g *generation) lookup(addr, time uint64) *Mapping {
	i := sort.Search(len(g.maps), func(i int) bool { return g.maps[i].Start > addr })
	var best *Mapping
	for i--; i >= 0 && g.maxEnd[i] > addr; i-- {
		m := g.maps[i]
		if addr < m.End && m.Time <= time && (best == nil || m.Time >= best.Time) {
			best = m
		}
	}
	return best
}

// Lookup returns the mapping that held addr in process pid at time, or
// nil. Kernel addresses are looked up in the kernel's mappings.
func (t *Timeline) Lookup(pid uint32, addr, time uint64, kernel bool) *Mapping {
	if kernel {
		return t.kernel.lookup(addr, time)
	}
	g := t.gen(pid, time, false)
	for g != nil {
		if m := g.lookup(addr, time); m != nil {
			return m
		}
		// Before its first own mapping a forked child still has its
		// parent's address space as it was at the fork.
		time = min(time, g.forked)
		g = g.parent
	}
	return nil
}

// threadChanges computes t.tchanges[tid], following its creators as
// Comm does.
func (t *Timeline) threadChanges(tid uint32) []uint64 {
	if cs, ok := t.tchanges[tid]; ok {
		return cs
	}
	t.tchanges[tid] = nil // a cycle in corrupt fork records ends here
	var cs []uint64
	for _, c := range t.comms[tid] {
		cs = append(cs, c.time)
	}
	if f, ok := t.threads[tid]; ok && f.ptid != tid {
		cs = append(cs, f.time)
		cs = append(cs, t.threadChanges(f.ptid)...)
	}
	slices.Sort(cs)
	cs = slices.Compact(cs)
	t.tchanges[tid] = cs
	return cs
}

// threadSpan returns the epoch of pid at time, the name of thread tid
// then, and the span of time [from, to) around time in which both stay
// the same, so callers can reuse them for the thread's other samples.
func (t *Timeline) threadSpan(pid, tid uint32, time uint64) (epoch uint64, comm string, from, to uint64) {
	from, to = 0, ^uint64(0)
	narrow := func(changes []uint64) {
		i := sort.Search(len(changes), func(j int) bool { return changes[j] > time })
		if i > 0 {
			from = max(from, changes[i-1])
		}
		if i < len(changes) {
			to = min(to, changes[i])
		}
	}
	gs := t.gens[pid]
	if pid == pidKernel {
		gs = []*generation{&t.kernel}
	}
	if len(gs) > 0 {
		starts := make([]uint64, len(gs))
		for i, g := range gs {
			starts[i] = g.start
		}
		narrow(starts)
		narrow(t.gen(pid, time, false).changes)
	}
	narrow(t.tchanges[tid])
	return t.epoch(pid, time), t.Comm(pid, tid, time), from, to
}

// Comm returns the name thread tid had at time.
func (t *Timeline) Comm(pid, tid uint32, time uint64) string {
	if tid == ^uint32(0) {
		// The kernel gives some samples no thread (-1, whatever
		// their pid): perf keeps them all in one thread of that
		// tid, named for it.
		return ":-1"
	}
	for range 64 { // bounds a cycle in corrupt fork records
		cs := t.comms[tid]
		i := sort.Search(len(cs), func(i int) bool { return cs[i].time > time })
		if i > 0 {
			return cs[i-1].comm
		}
		// Before its first name of its own (an exec, a
		// PR_SET_NAME) a thread has its creator's, as perf gives a
		// new thread its parent's comm at the fork.
		f, ok := t.threads[tid]
		if !ok || f.ptid == tid {
			if len(cs) > 0 {
				return cs[0].comm
			}
			break
		}
		tid, time = f.ptid, min(time, f.time)
	}
	if cs := t.comms[pid]; len(cs) > 0 {
		return cs[0].comm
	}
	if tid == 0 {
		// The idle task: no COMM record names it (/proc has no pid 0),
		// and perf calls it swapper, as the kernel does.
		return "swapper"
	}
	return ":" + fmt.Sprint(tid)
}
