package process

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Mapping is one mapping of a process (or of the kernel).
type Mapping struct {
	ID         int32 // in the order the Tracker was told of mappings, from 0
	PID        uint32
	Start, End uint64
	Pgoff      uint64
	Path       string
	BuildID    string // hex; "" when unknown
	Time       uint64 // when it was mapped
	Anon       bool   // anonymous memory: JIT code when Exec
	Kernel     bool
	// Exec says the mapping is executable. Only executable mappings
	// resolve addresses; the others are kept for Process.
	Exec bool
}

// Process is what the Tracker knows of one pid.
type Process struct {
	PID  uint32
	Comm string // the last name the process had
	// Mappings are all its mappings, executable or not, across execs,
	// in time order.
	Mappings []*Mapping
}

// Span is what holds of a thread around a time (Tracker.Thread): its
// name, and the epoch of its process's address space, in the span of
// time [From, To).
type Span struct {
	Comm string
	// Epoch numbers the spans of time in which every user address of
	// the process resolves the same way: equal epochs (at one Version),
	// equal answers from Lookup.
	Epoch    uint64
	From, To uint64
}

// KernelPID is the pid of the kernel's own mappings (perf's
// HOST_KERNEL_ID).
const KernelPID = ^uint32(0)

// Tracker follows processes, their threads' names and their mappings
// over time, from the records that tell of them (mmaps, renames and
// execs, forks), and answers which mapping held an address of a process
// at a time. Records may come in any order: a record of another CPU
// that arrives late (a child's exec before its fork) takes its place by
// its time, so the answers are those of the records sorted by time, the
// order perf's ordered-events queue gives.
//
// It is fed and asked incrementally, as a collector resolving samples
// as they arrive does, or fed a whole recording first, as a replay does.
// A Tracker is not safe for concurrent use while it is fed; after
// Settle, and until the next record, any number of goroutines may ask
// it at once.
type Tracker struct {
	nmaps    int32 // mappings told of: the next one's ID
	procs    map[uint32]*proc
	kernel   proc                    // the kernel's mappings: one generation
	comms    map[uint32][]commChange // by tid, in arrival order
	threads  map[uint32][]threadFork // tid -> its creations (a tid is reused), by time
	owner    map[uint32]uint32       // tid -> the pid it was last named in
	buildIDs map[string]string       // path -> build-id, for mappings that carry none
	seq      uint64                  // orders records of equal times by arrival

	// version changes with every record; derived data (a process's
	// generations, the changes of a generation, the threads') say at
	// which version they were computed.
	version uint64
	// tchanges are the threads' changes, by tid, and comms and threads
	// are sorted, but for the tids in unsettled: those told of since
	// (settleThreads). A daemon's Tracker knows every thread of the
	// machine, and is asked after nearly every record.
	tchanges  map[uint32][]uint64
	unsettled map[uint32]struct{}
}

// proc is what the Tracker was told of one pid, and its address spaces
// as computed from that.
type proc struct {
	pid    uint32
	info   bool // a record named the pid: Processes lists it
	starts []start
	maps   []*Mapping // executable mappings, in arrival order
	all    []*Mapping // every mapping, in arrival order
	ref    key        // the first fork from pid, when hasRef
	hasRef bool
	// changed is the version of the last record about pid's address
	// space; gens were computed from them at builtAt. named is that of
	// the last about its threads' names and creations (Stamp).
	changed, builtAt uint64
	named            uint64
	built            bool
	gens             []*generation
	genStarts        []uint64 // the start of each of gens
	// tids are the threads records named in pid, for Forget; children
	// counts the processes forked from pid that are not forgotten, and
	// gone says Forget was asked while some were.
	tids     []uint32
	children int
	gone     bool
}

// key orders records by time, then by arrival.
type key struct{ time, seq uint64 }

func (a key) cmp(b key) int {
	if c := cmp.Compare(a.time, b.time); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// start is a fork or exec that began an address space of a pid.
type start struct {
	key
	exec bool
	ppid uint32 // the parent, for a fork
}

// generation is one address space a pid had: a process from its fork or
// exec until the next exec or reuse of the pid. A pid that something
// names before its first fork or exec (a process that existed before the
// recording, a parent whose own fork was not recorded) has an implicit
// first generation, from time 0.
type generation struct {
	pid        uint32
	start      uint64 // 0 for the implicit generation
	key        key    // its place among the pid's generations
	fork       bool   // forked from ppid (else exec'd, or implicit)
	ppid       uint32
	prev       *generation // the image an exec replaced, else nil
	forked     uint64      // when it forked or exec'd
	maps       []*Mapping  // sorted by Start
	maxEnd     []uint64    // maxEnd[i] is the largest End of maps[:i+1]
	changes    []uint64    // see computeChanges; valid at changesAt
	changesAt  uint64
	hasChanges bool
	// parentGen is what parent returns, valid at parentAt: a fork's
	// parent is found in another pid's generations, and lookups walk to
	// it often (a shell's children, before their exec).
	parentGen *generation
	parentAt  uint64
	hasParent bool
}

type commChange struct {
	time, seq uint64
	comm      string
}

type threadFork struct {
	ptid uint32
	time uint64
}

// New returns an empty Tracker.
func New() *Tracker {
	return &Tracker{
		procs:   map[uint32]*proc{},
		comms:   map[uint32][]commChange{},
		threads: map[uint32][]threadFork{},
		owner:   map[uint32]uint32{},
		kernel:  proc{pid: KernelPID},

		tchanges:  map[uint32][]uint64{},
		unsettled: map[uint32]struct{}{},
	}
}

// SetBuildIDs gives the build-ids of images by path (a recording's
// BUILD_ID feature), for the mappings that carry none: those told of
// already and those to come.
func (t *Tracker) SetBuildIDs(ids map[string]string) {
	t.buildIDs = ids
	set := func(ms []*Mapping) {
		for _, m := range ms {
			if m.BuildID == "" {
				m.BuildID = ids[m.Path]
			}
		}
	}
	set(t.kernel.maps)
	for _, p := range t.procs {
		set(p.all)
	}
}

func (t *Tracker) next() key {
	t.seq++
	t.version++
	return key{seq: t.seq}
}

func (t *Tracker) proc(pid uint32) *proc {
	p := t.procs[pid]
	if p == nil {
		// named: a pid forgotten and told of again is another
		// process, with another Stamp.
		p = &proc{pid: pid, named: t.version}
		t.procs[pid] = p
	}
	return p
}

// Map tells of a mapping made at m.Time; its ID is set, and a missing
// build-id is taken from SetBuildIDs'. A kernel mapping (m.Kernel)
// belongs to KernelPID.
func (t *Tracker) Map(m Mapping) *Mapping {
	t.next()
	mp := &m
	mp.ID = t.nmaps
	t.nmaps++
	if mp.Kernel {
		mp.PID = KernelPID
	}
	if mp.BuildID == "" {
		mp.BuildID = t.buildIDs[mp.Path]
	}
	p := &t.kernel
	if !mp.Kernel {
		p = t.proc(mp.PID)
		p.info = true
		p.all = append(p.all, mp)
	}
	p.changed = t.version
	if mp.Exec {
		p.maps = append(p.maps, mp)
	}
	return mp
}

// SetComm tells that thread tid of process pid took the name comm at
// time; exec says it came with an exec, which begins a new address space.
func (t *Tracker) SetComm(pid, tid uint32, time uint64, comm string, exec bool) {
	k := t.next()
	k.time = time
	p := t.proc(pid)
	p.info = true
	t.addTID(p, tid)
	if exec {
		p.starts = append(p.starts, start{key: k, exec: true})
		p.changed = t.version
	}
	p.named = t.version
	t.comms[tid] = append(t.comms[tid], commChange{time, k.seq, comm})
	t.unsettled[tid] = struct{}{}
}

// Fork tells that thread tid of process pid was created at time by
// thread ptid of process ppid: a new process when pid is not ppid, with
// a copy of ppid's address space.
func (t *Tracker) Fork(pid, ppid, tid, ptid uint32, time uint64) {
	k := t.next()
	k.time = time
	t.proc(pid).named = t.version
	t.addTID(t.proc(pid), tid)
	if pid != ppid {
		p := t.proc(pid)
		p.info = true
		p.starts = append(p.starts, start{key: k, ppid: ppid})
		p.changed = t.version
		pp := t.proc(ppid)
		pp.children++
		if !pp.hasRef || k.cmp(pp.ref) < 0 {
			pp.ref, pp.hasRef = k, true
			pp.changed = t.version
		}
	}
	t.threads[tid] = append(t.threads[tid], threadFork{ptid, time})
	t.unsettled[tid] = struct{}{}
}

func (t *Tracker) addTID(p *proc, tid uint32) {
	t.owner[tid] = p.pid
	if !slices.Contains(p.tids, tid) {
		p.tids = append(p.tids, tid)
	}
}

// Forget lets go of process pid, which exited, so that a Tracker fed for
// weeks (the daemon's) keeps only the processes that live: its mappings,
// its threads' names and forks. A process that others were forked from
// is kept until they are forgotten too, since a child that has not
// exec'd still looks up addresses in its parent's address space as it
// was at the fork. Records of pid after Forget begin a new process.
func (t *Tracker) Forget(pid uint32) {
	p := t.procs[pid]
	if p == nil || pid == KernelPID {
		return
	}
	if p.children > 0 {
		p.gone = true
		return
	}
	t.next()
	delete(t.procs, pid)
	for _, tid := range p.tids {
		if t.owner[tid] != pid {
			continue // the tid was reused by a process that lives
		}
		delete(t.comms, tid)
		delete(t.threads, tid)
		delete(t.owner, tid)
		delete(t.tchanges, tid)
		delete(t.unsettled, tid)
	}
	for _, s := range p.starts {
		if s.exec || s.ppid == pid {
			continue
		}
		if pp := t.procs[s.ppid]; pp != nil {
			if pp.children--; pp.children == 0 && pp.gone {
				t.Forget(s.ppid)
			}
		}
	}
}

// Version changes whenever the Tracker is told anything: answers given
// at another version (epochs among them) may differ. A resolver that
// caches by epoch drops its caches when it changes.
func (t *Tracker) Version() uint64 { return t.version }

// Stamp changes whenever what Lookup, Thread and Comm answer about pid
// may change: a record about pid, or about a process it was forked
// from, whose address space and threads' names it starts with (a record
// that arrives late may change them as they were at the fork). Unlike
// Version it stays while other processes come and go, so a resolver can
// keep what it cached of pid across them. A value once given is never
// given for another state of pid (0: the Tracker knows nothing of pid).
func (t *Tracker) Stamp(pid uint32) uint64 {
	if t.procs[pid] == nil {
		return 0
	}
	// The stamp is the latest change of any process pid was forked
	// from, so each is visited once: following fork records as a tree
	// took exponential time when corrupt ones made two processes each
	// the other's parent twice (a fuzzed file took seconds a sample).
	// At most stampReach processes: real ancestries are shallower, and
	// a hostile file's chain of forks costs no more than that.
	var buf [16]uint32
	seen := append(buf[:0], pid)
	var s uint64
	for i := 0; i < len(seen); i++ {
		p := t.procs[seen[i]]
		if p == nil {
			continue
		}
		s = max(s, p.changed, p.named)
		for _, st := range p.starts {
			if !st.exec && len(seen) < stampReach && !slices.Contains(seen, st.ppid) {
				seen = append(seen, st.ppid)
			}
		}
	}
	return s
}

// stampReach bounds the processes Stamp visits.
const stampReach = 64

// Settle computes what the Tracker derives from what it was told, so
// that goroutines may ask it at once until the next record.
func (t *Tracker) Settle() {
	t.build(&t.kernel)
	for _, p := range t.procs {
		t.build(p)
	}
	t.kernel.gens[0].computeChanges(t)
	for _, p := range t.procs {
		for _, g := range p.gens {
			g.computeChanges(t)
		}
	}
	t.settleThreads()
}

// stale reports whether p's generations are to be computed again.
func (p *proc) stale() bool { return !p.built || p.builtAt < p.changed }

// build computes p's generations when what it was told of p changed.
func (t *Tracker) build(p *proc) {
	if !p.stale() {
		return
	}
	p.built, p.builtAt = true, t.version
	if p == &t.kernel {
		g := &generation{pid: KernelPID}
		g.setMaps(p.maps)
		p.gens, p.genStarts = []*generation{g}, []uint64{0}
		return
	}
	starts := slices.Clone(p.starts)
	slices.SortStableFunc(starts, func(a, b start) int { return a.key.cmp(b.key) })
	var gens []*generation
	// The implicit first generation: something forked from the pid
	// before its own first fork or exec, or it mapped something with
	// none at all.
	if len(starts) == 0 && (p.hasRef || len(p.maps) > 0) || p.hasRef && p.ref.cmp(starts[0].key) < 0 {
		gens = append(gens, &generation{pid: p.pid, key: p.ref})
	}
	for _, s := range starts {
		g := &generation{pid: p.pid, start: s.time, key: s.key, forked: s.time}
		if s.exec {
			// Until the exec returns, samples in it carry the old
			// image's user addresses (libc's execve): like perf, which
			// keeps a thread's maps across an exec, resolve what the
			// new image does not map against the old one.
			if len(gens) > 0 {
				g.prev = gens[len(gens)-1]
			}
		} else {
			g.fork, g.ppid = true, s.ppid
		}
		gens = append(gens, g)
	}
	byGen := make([][]*Mapping, len(gens))
	for _, m := range p.maps {
		i := genAt(gens, m.Time)
		byGen[i] = append(byGen[i], m)
	}
	p.genStarts = make([]uint64, len(gens))
	for i, g := range gens {
		g.setMaps(byGen[i])
		p.genStarts[i] = g.start
	}
	p.gens = gens
}

// genAt is the index in gens of the generation at time: the last one
// started by then, else the first.
func genAt(gens []*generation, time uint64) int {
	for i := len(gens) - 1; i >= 0; i-- {
		if gens[i].start <= time {
			return i
		}
	}
	return 0
}

func (g *generation) setMaps(maps []*Mapping) {
	g.maps = slices.Clone(maps)
	sort.SliceStable(g.maps, func(i, j int) bool { return g.maps[i].Start < g.maps[j].Start })
	g.maxEnd = make([]uint64, len(g.maps))
	var me uint64
	for i, m := range g.maps {
		me = max(me, m.End)
		g.maxEnd[i] = me
	}
}

// gens returns pid's generations, computing them if need be.
func (t *Tracker) gens(pid uint32) []*generation {
	if p := t.built(pid); p != nil {
		return p.gens
	}
	return nil
}

// built returns pid's proc with its generations computed, or nil.
func (t *Tracker) built(pid uint32) *proc {
	p := &t.kernel
	if pid != KernelPID {
		p = t.procs[pid]
	}
	if p != nil && p.stale() {
		t.build(p)
	}
	return p
}

// parent returns the address space g began as a copy of: the one its
// parent had at the fork, or the image its exec replaced.
func (t *Tracker) parent(g *generation) *generation {
	if !g.fork {
		return g.prev
	}
	if g.hasParent && g.parentAt == t.version {
		return g.parentGen
	}
	g.parentGen, g.parentAt, g.hasParent = t.forkParent(g), t.version, true
	return g.parentGen
}

// forkParent finds the parent of a forked generation.
func (t *Tracker) forkParent(g *generation) *generation {
	gs := t.gens(g.ppid)
	// The parent's generation when it forked: the last one that began
	// before the fork; its implicit one when none did.
	i, found := slices.BinarySearchFunc(gs, g.key, func(p *generation, k key) int { return p.key.cmp(k) })
	if found {
		return gs[i]
	}
	if i == 0 {
		return nil
	}
	return gs[i-1]
}

// computeChanges fills g.changes: the times, sorted, at which what Lookup
// finds in g can change: its mappings' and, as Lookup falls back to the
// parent as it was at the fork, the parent's changes up to then.
func (g *generation) computeChanges(t *Tracker) []uint64 {
	if g.hasChanges && g.changesAt == t.version {
		return g.changes
	}
	g.hasChanges, g.changesAt = true, t.version
	var cs []uint64
	for _, m := range g.maps {
		cs = append(cs, m.Time)
	}
	if p := t.parent(g); p != nil {
		for _, c := range p.computeChanges(t) {
			if c <= g.forked {
				cs = append(cs, c)
			}
		}
	}
	slices.Sort(cs)
	g.changes = slices.Compact(cs)
	return g.changes
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

// Lookup returns the executable mapping that held addr in process pid at
// time, or nil. Kernel addresses (kernel set) are looked up in the
// kernel's mappings.
func (t *Tracker) Lookup(pid uint32, addr, time uint64, kernel bool) *Mapping {
	// built's work, written out: this is on the path of every lookup.
	p := &t.kernel
	if !kernel && pid != KernelPID {
		if p = t.procs[pid]; p == nil {
			return nil
		}
	}
	if p.stale() {
		t.build(p)
	}
	if len(p.gens) == 0 {
		return nil
	}
	if kernel {
		return p.gens[0].lookup(addr, time)
	}
	g := p.gens[genAt(p.gens, time)]
	for g != nil {
		if m := g.lookup(addr, time); m != nil {
			return m
		}
		// Before its first own mapping a forked child still has its
		// parent's address space as it was at the fork.
		time = min(time, g.forked)
		g = t.parent(g)
	}
	return nil
}

// Unborn reports whether what Lookup answers for pid's user addresses
// at time may still change with records of later times: pid, or a
// process it was forked from as Lookup walks to it, is not known, or
// had not begun by then, and Lookup answers as of its first generation,
// which a record of any time may yet begin. A reader that resolves a
// sample before it has read the whole file (perfdatasrc's one pass)
// leaves such a sample to the end.
func (t *Tracker) Unborn(pid uint32, time uint64) bool {
	gs := t.gens(pid)
	if len(gs) == 0 {
		return true
	}
	g := gs[genAt(gs, time)]
	for range stampReach {
		if g.start > time {
			return true
		}
		fork := g.fork
		time = min(time, g.forked)
		if g = t.parent(g); g == nil {
			return fork // a parent not known yet; else the walk's end
		}
	}
	return true
}

// epoch numbers the spans of time in which every user address of pid
// resolves the same way: equal epochs, equal answers from Lookup.
func (t *Tracker) epoch(pid uint32, time uint64) uint64 {
	gs := t.gens(pid)
	if len(gs) == 0 {
		return 0
	}
	i := len(gs) - 1
	for i > 0 && gs[i].start > time {
		i-- // as genAt does
	}
	cs := gs[i].computeChanges(t)
	n := sort.Search(len(cs), func(j int) bool { return cs[j] > time })
	return uint64(i)<<32 | uint64(n)
}

// settleThreads sorts the names of each thread told of since it last
// ran by time and computes, for each, the times at which Comm's answer
// for it can change: its and its creators' renames and forks.
func (t *Tracker) settleThreads() {
	if len(t.unsettled) == 0 {
		return
	}
	// A thread's changes are its own renames and forks: Comm gives it
	// its creator's name as it was at the fork, one name until the
	// thread's next change or fork (even one of itself, which ends its
	// creator's), so the creator's renames are not the thread's.
	for tid := range t.unsettled {
		cs := t.comms[tid]
		slices.SortStableFunc(cs, func(a, b commChange) int {
			return key{a.time, a.seq}.cmp(key{b.time, b.seq})
		})
		fs := t.threads[tid]
		slices.SortStableFunc(fs, func(a, b threadFork) int { return cmp.Compare(a.time, b.time) })
		ch := t.tchanges[tid][:0]
		for _, c := range cs {
			ch = append(ch, c.time)
		}
		for _, f := range fs {
			ch = append(ch, f.time)
		}
		slices.Sort(ch)
		t.tchanges[tid] = slices.Compact(ch)
	}
	clear(t.unsettled)
}

// Thread returns what holds of thread tid of process pid at time: its
// name, the process's epoch, and the span of time around time in which
// both stay the same, so callers can reuse them for the thread's other
// samples.
func (t *Tracker) Thread(pid, tid uint32, time uint64) Span {
	t.settleThreads()
	sp := t.Epoch(pid, time)
	sp.narrow(t.tchanges[tid], time)
	sp.Comm = t.Comm(pid, tid, time)
	return sp
}

// Epoch returns the epoch of pid's address space at time and the span
// of time around time in which it holds (Span without Comm): what an
// unwinder keeps what it found at the process's addresses by, across
// samples of any of its threads.
func (t *Tracker) Epoch(pid uint32, time uint64) Span {
	sp := Span{From: 0, To: ^uint64(0)}
	if p := t.built(pid); p != nil && len(p.gens) > 0 {
		sp.narrow(p.genStarts, time)
		sp.narrow(p.gens[genAt(p.gens, time)].computeChanges(t), time)
	}
	sp.Epoch = t.epoch(pid, time)
	return sp
}

// narrow narrows sp to the span between the changes (sorted) around time.
func (sp *Span) narrow(changes []uint64, time uint64) {
	i := sort.Search(len(changes), func(j int) bool { return changes[j] > time })
	if i > 0 {
		sp.From = max(sp.From, changes[i-1])
	}
	if i < len(changes) {
		sp.To = min(sp.To, changes[i])
	}
}

// Steady reports whether a sample of thread tid of pid at a user address
// addr (user set), or in the kernel, resolves the same way at every time
// in [from, to]: the thread's name and the process's generation stay and,
// for a user address, the mapping Lookup finds for it is the same one
// throughout, however the process's other mappings change (kernel
// addresses are named from kallsyms, whatever the mappings). A flat
// report sums the samples of such a place and resolves them once;
// Thread's span, which ends at any change of the process, sent a tenth
// of the places of a busy system back to be read sample by sample.
func (t *Tracker) Steady(pid, tid uint32, addr uint64, user bool, from, to uint64) bool {
	t.settleThreads()
	within := func(cs []uint64) []uint64 { // the changes in (from, to]
		i := sort.Search(len(cs), func(j int) bool { return cs[j] > from })
		j := sort.Search(len(cs), func(j int) bool { return cs[j] > to })
		return cs[i:max(i, j)]
	}
	if len(within(t.tchanges[tid])) > 0 {
		return false
	}
	p := t.built(pid)
	if p == nil || len(p.gens) == 0 {
		return true
	}
	if len(within(p.genStarts)) > 0 {
		return false
	}
	if !user {
		return true
	}
	m := t.Lookup(pid, addr, from, false)
	for _, c := range within(p.gens[genAt(p.gens, from)].computeChanges(t)) {
		if t.Lookup(pid, addr, c, false) != m {
			return false
		}
	}
	return true
}

// forkBefore returns the last of a tid's creations at or before time.
func forkBefore(fs []threadFork, time uint64) (threadFork, bool) {
	i := sort.Search(len(fs), func(i int) bool { return fs[i].time > time })
	if i == 0 {
		return threadFork{}, false
	}
	return fs[i-1], true
}

// Comm returns the name thread tid of process pid had at time.
func (t *Tracker) Comm(pid, tid uint32, time uint64) string {
	t.settleThreads()
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
		// new thread its parent's comm at the fork. A fork after time
		// created a later thread of the same tid, not this one.
		f, ok := forkBefore(t.threads[tid], time)
		if !ok || f.ptid == tid {
			if len(cs) > 0 {
				return cs[0].comm
			}
			break
		}
		tid, time = f.ptid, f.time
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

// Process returns what the Tracker knows of pid, and false when nothing
// named it.
func (t *Tracker) Process(pid uint32) (Process, bool) {
	p := t.procs[pid]
	if p == nil || !p.info {
		return Process{}, false
	}
	ms := slices.Clone(p.all)
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Time < ms[j].Time })
	return Process{PID: pid, Comm: t.Comm(pid, pid, ^uint64(0)), Mappings: ms}, true
}

// Executable returns the mapping of the executable pid ran last, or nil
// when its mappings name none: of the file mappings of its last address
// space (for a process forked without an exec, its parent's at the fork),
// the one named as the process is (its comm is the executable's base
// name, cut to 15 bytes by the kernel), else the first that is not a
// shared library.
func (t *Tracker) Executable(pid uint32) *Mapping {
	gs := t.gens(pid)
	if len(gs) == 0 {
		return nil
	}
	comm := t.Comm(pid, pid, ^uint64(0))
	g := gs[len(gs)-1]
	for range 64 { // bounds a cycle in corrupt fork records
		var first *Mapping
		for _, m := range g.maps {
			if m.Anon || m.Kernel || !strings.HasPrefix(m.Path, "/") {
				continue
			}
			base := filepath.Base(m.Path)
			if base[:min(len(base), 15)] == comm {
				return m
			}
			if first == nil && !strings.Contains(base, ".so") {
				first = m
			}
		}
		if first != nil {
			return first
		}
		if g = t.parent(g); g == nil {
			return nil
		}
	}
	return nil
}

// Processes returns every process the Tracker knows, by pid.
func (t *Tracker) Processes() []Process {
	out := make([]Process, 0, len(t.procs))
	for pid := range t.procs {
		if p, ok := t.Process(pid); ok {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}
