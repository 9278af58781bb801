package anonbind

import (
	"errors"
	"fmt"
	"github.com/jitprof/jitprof/internal/unwind"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/codemap"
	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/resolve"
)

// Options configure a Binder.
type Options struct {
	// Handlers are tried in order for each process (anon.Select).
	Handlers []anon.Handler
	// Force overrides the trust checks on JIT data files.
	Force bool
	// Proc is where live processes are looked up: this machine's /proc
	// (the zero Proc); tests and archives point it elsewhere.
	Proc linux.Proc
}

// Claim says how one process's anonymous samples were named.
type Claim struct {
	PID     uint32
	Comm    string
	Handler string // "" when no handler claimed the process
	Source  string // the resolver's description of its data
	// Errs are the handlers' errors on the way to the claim (or to none).
	Errs []error
	// ResolveErr is what went wrong while the claiming handler resolved
	// (an external handler that failed, hung or broke the protocol): the
	// addresses it was asked about after that stay unnamed. Set by Close.
	ResolveErr error
	// Asked and Named count the lookups of JIT addresses the claiming
	// handler answered, and those it named.
	Asked, Named uint64
	// Ambiguous lists the ranges a timeless source could not attribute
	// to one name, with the names.
	Ambiguous []Ambiguity
}

// Ambiguity is a range of code that several names claimed.
type Ambiguity struct {
	Start, End uint64
	Names      []string
}

// Processes tells a Binder what is known of the processes whose JIT code
// it names: a recording's (Recorded), a sample database's, a live
// collector's.
type Processes interface {
	// Process returns what a handler sees of pid before the Binder
	// looks for the live process (anon.Process.FillLive): its name,
	// mappings, who it was when recorded, and the JIT data copied then.
	// A pid nothing is known of gives just its PID.
	Process(pid uint32) anon.Process
}

// Binder names JIT code with anon handlers: a resolve.AnonResolver and
// resolve.SeqResolver. Its Resolve may be called concurrently: processes
// are claimed once each, in parallel with each other, and lookups of
// claimed processes take no lock but a read lock on names already
// built.
type Binder struct {
	opts  Options
	procs Processes

	mu    sync.RWMutex
	state map[uint32]*procState
	// prev are the claims of the Binder this one renews (Live.Renew):
	// each kept where the data it read is unchanged (claim, same).
	prev map[uint32]*procState
}

type procState struct {
	once  sync.Once
	claim Claim // all but Ambiguous, ResolveErr and the counts are set once
	r     anon.Resolver
	image string
	// key is what the handlers read of the process's timeline when
	// they claimed it (anon.TimelineKey), and stamp when Processes last
	// told it (stamper), for Settled.
	key   string
	stamp uint64

	// Answers that Prepare got in batches: qs sorted, ans[i] the index in
	// syms of qs[i]'s answer, or -1 for an unknown address.
	qs   []anon.Query
	ans  []int32
	syms []anon.Symbol

	asked, named atomic.Uint64

	// proc is the process as claimed, and reads what its handlers
	// looked for then: a later Binder keeps the claim while they are
	// unchanged (Binder.claim). claimed says the claim is made; taken
	// that a later Binder kept it, and closes its resolver.
	proc           anon.Process
	reads          *anon.Reads
	claimed, taken atomic.Bool
	claimedAt      time.Time // when it was claimed, or last kept

	mu    sync.RWMutex
	names map[symKey]string // display names, built once per symbol
	amb   map[uint64]int    // range start -> index in claim.Ambiguous
}

// symKey identifies what a resolver said of a piece of code.
type symKey struct {
	start, size, gen uint64
	name             string // "" for an ambiguous range
}

// New returns a Binder of procs' JIT code. Live processes are looked for
// in opts.Proc, and the JIT data files they still have are read
// through internal/trust, judged by who procs say each process was.
func New(procs Processes, opts Options) *Binder {
	return &Binder{opts: opts, procs: procs, state: map[uint32]*procState{}}
}

// Recorded is the Processes of a recording: the processes and mappings
// of t, and who each was and the JIT data files copied for it, from the
// recorder's bundle (internal/jitbundle; nil when the recording has
// none).
func Recorded(t *process.Tracker, bundle *jitbundle.Bundle, span anon.TimeRange) Processes {
	r := recorded{t: t, ids: map[uint32]jitbundle.Process{}, files: map[uint32][]jitbundle.Entry{}, span: span}
	if bundle != nil {
		for _, p := range bundle.Processes {
			r.ids[uint32(p.PID)] = p
		}
		for _, e := range bundle.Files {
			r.files[uint32(e.PID)] = append(r.files[uint32(e.PID)], e)
		}
	}
	return r
}

type recorded struct {
	t     *process.Tracker
	ids   map[uint32]jitbundle.Process
	files map[uint32][]jitbundle.Entry
	span  anon.TimeRange // the recording's, for handlers of protocol 2
}

func (r recorded) Process(pid uint32) anon.Process {
	sp, _ := r.t.Process(pid)
	var id *linux.Identity
	if rp, ok := r.ids[pid]; ok {
		id = &linux.Identity{UID: rp.UID, GID: rp.GID, NSPID: rp.NSPID, StartTime: rp.StartTime}
	}
	p := anon.NewProcess(pid, sp.Comm, sp.Mappings, id)
	p.Span = r.span
	for _, e := range r.files[pid] {
		if p.Embedded == nil {
			p.Embedded, p.Kinds = map[string][]byte{}, map[string]string{}
		}
		p.Embedded[e.Path] = e.Data
		p.Kinds[e.Path] = e.Kind
	}
	return p
}

// proc returns pid's state, claiming the process on first use; callers
// for other processes do not wait for the claim.
func (b *Binder) proc(pid uint32) *procState {
	b.mu.RLock()
	st := b.state[pid]
	b.mu.RUnlock()
	if st == nil {
		b.mu.Lock()
		if st = b.state[pid]; st == nil {
			st = &procState{names: map[symKey]string{}, amb: map[uint64]int{}}
			b.state[pid] = st
		}
		b.mu.Unlock()
	}
	st.once.Do(func() { b.claim(pid, st) })
	return st
}

// Resolve implements resolve.AnonResolver: the code at addr in pid at
// time, as the handler that claimed pid names it.
func (b *Binder) Resolve(pid uint32, addr, time uint64) (resolve.AnonFrame, bool) {
	st := b.proc(pid)
	if st.r == nil {
		return resolve.AnonFrame{}, false
	}
	st.asked.Add(1)
	sym, prepared := st.prepared(addr, time)
	if !prepared {
		sym, _ = st.r.Resolve(addr, time)
	}
	return st.frame(&sym)
}

// UnwindTable implements unwind.JITInfo: the unwinding information the
// handler that claimed pid read for the code at addr at time.
func (b *Binder) UnwindTable(pid uint32, addr, time uint64) (*unwind.Table, uint64, bool) {
	st := b.proc(pid)
	u, ok := st.r.(anon.Unwinder)
	if !ok {
		return nil, 0, false
	}
	return u.UnwindTable(addr, time)
}

// Named implements unwind.JITInfo: whether the handler that claimed pid
// names the code at addr at time (without counting it as a sample's).
func (b *Binder) Named(pid uint32, addr, time uint64) bool {
	st := b.proc(pid)
	if st.r == nil {
		return false
	}
	sym, prepared := st.prepared(addr, time)
	if !prepared {
		sym, _ = st.r.Resolve(addr, time)
	}
	return sym.Found()
}

// ResolveSeq implements resolve.SeqResolver: the code at addr in pid of
// generation seq (jitlog's sequence number, jitdump's code index), as a
// sample file that keeps the generation instead of the time asks; not
// found when the claiming handler's data has no generations.
func (b *Binder) ResolveSeq(pid uint32, addr, seq uint64) (resolve.AnonFrame, bool) {
	st := b.proc(pid)
	sr, ok := st.r.(anon.SeqResolver)
	if !ok {
		return resolve.AnonFrame{}, false
	}
	st.asked.Add(1)
	sym, _ := sr.ResolveSeq(addr, seq)
	return st.frame(&sym)
}

// frame is the frame of what the handler said, and whether it said
// anything.
func (st *procState) frame(sym *anon.Symbol) (resolve.AnonFrame, bool) {
	if !sym.Found() {
		return resolve.AnonFrame{}, false
	}
	st.named.Add(1)
	unload := sym.Unload
	if unload == codemap.Forever {
		unload = 0
	}
	return resolve.AnonFrame{Func: st.name(sym), Image: st.image, Handler: st.claim.Handler, Start: sym.Start, File: sym.File, Line: sym.Line, Code: sym.Code,
		Size: sym.Size, Gen: sym.Gen, Load: sym.Load, Unload: unload, Held: sym.Held}, true
}

// prepared returns Prepare's answer for (addr, time), if it had one.
func (st *procState) prepared(addr, time uint64) (anon.Symbol, bool) {
	q := anon.Query{Addr: addr, Time: time}
	i, ok := slices.BinarySearchFunc(st.qs, q, cmpQuery)
	if !ok {
		return anon.Symbol{}, false
	}
	if st.ans[i] < 0 {
		return anon.Symbol{}, true
	}
	return st.syms[st.ans[i]], true
}

func cmpQuery(a, b anon.Query) int {
	if a.Addr != b.Addr {
		if a.Addr < b.Addr {
			return -1
		}
		return 1
	}
	if a.Time != b.Time {
		if a.Time < b.Time {
			return -1
		}
		return 1
	}
	return 0
}

// name returns the report's name of sym, building it the first time:
// names may be long, and a process has many samples in each function.
func (st *procState) name(sym *anon.Symbol) string {
	k := symKey{start: sym.Start, size: sym.Size, gen: sym.Gen, name: sym.Name}
	st.mu.RLock()
	n, ok := st.names[k]
	st.mu.RUnlock()
	if ok {
		return n
	}
	if len(sym.Ambiguous) > 0 {
		n = "[ambiguous: " + strings.Join(sym.Ambiguous, " | ") + "]"
	} else {
		n = sym.Name
		if sym.Gen != 0 {
			// Time-aware sources tell generations apart; so does the
			// report, because re-generated code is different code.
			n += " [gen " + strconv.FormatUint(sym.Gen, 10) + "]"
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if prev, ok := st.names[k]; ok {
		return prev
	}
	st.names[k] = n
	if len(sym.Ambiguous) > 0 {
		if _, seen := st.amb[sym.Start]; !seen {
			st.amb[sym.Start] = len(st.claim.Ambiguous)
			st.claim.Ambiguous = append(st.claim.Ambiguous, Ambiguity{Start: sym.Start, End: sym.Start + sym.Size, Names: sym.Ambiguous})
		}
	}
	return n
}

func (b *Binder) claim(pid uint32, st *procState) {
	st.claimedAt = time.Now()
	defer st.claimed.Store(true)
	p := b.procs.Process(pid)
	st.key, _ = anon.TimelineKey(b.opts.Handlers, &p)
	if sp, ok := b.procs.(stamper); ok {
		st.stamp = sp.Stamp(pid)
	}
	if old := b.prev[pid]; old != nil && b.same(pid, &p, st.key, old) {
		r, reads := old.r, old.reads
		ok := reads.Unchanged(&old.proc)
		if !ok {
			r, reads, ok = anon.Extend(r, reads, &old.proc)
		}
		if ok {
			old.taken.Store(true)
			st.claim, st.r, st.image, st.proc, st.reads = old.claim, r, old.image, old.proc, reads
			if r != nil { // nil: no handler claimed it, and none would
				st.claim.Source = r.Source()
			}
			st.claim.Ambiguous = nil // built again as the names are asked for
			return
		}
	}
	p.Force = b.opts.Force
	live := p.FillLive(b.opts.Proc)
	st.claim = Claim{PID: pid, Comm: p.Comm}
	// A claim is kept only of the live process it read the files of,
	// through its root, and of nothing handed in.
	if live && len(p.Embedded) == 0 {
		p.Reads = &anon.Reads{}
		st.proc, st.reads = p, p.Reads
	}
	r, h, errs := anon.Claim(b.opts.Handlers, &p)
	st.claim.Errs = errs
	if r != nil {
		st.r = r
		st.claim.Handler = h.Name()
		st.claim.Source = r.Source()
		st.image = "[JIT " + h.Name() + "] " + p.Comm
	}
}

// Claims returns how each process with anonymous samples was handled, by
// pid, once the lookups are done. After Close, they also say what went
// wrong while resolving.
func (b *Binder) Claims() []Claim {
	b.mu.RLock()
	defer b.mu.RUnlock()
	l := make([]Claim, 0, len(b.state))
	for _, st := range b.state {
		st.mu.RLock()
		c := st.claim
		c.Ambiguous = slices.Clone(c.Ambiguous)
		st.mu.RUnlock()
		c.Asked, c.Named = st.asked.Load(), st.named.Load()
		l = append(l, c)
	}
	sort.Slice(l, func(i, j int) bool { return l[i].PID < l[j].PID })
	return l
}

// Close closes the resolvers (external handlers are processes) once the
// lookups are done, all at once so that slow ones wait together, and
// keeps each one's error in its Claim.
func (b *Binder) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var (
		wg   sync.WaitGroup
		emu  sync.Mutex
		errs []error
	)
	// Its own, and those of the Binder it renewed that it did not keep.
	for _, states := range []map[uint32]*procState{b.state, b.prev} {
		for pid, st := range states {
			if st.r == nil || st.taken.Load() {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := st.r.Close()
				st.r = nil
				if err == nil {
					return
				}
				st.mu.Lock()
				st.claim.ResolveErr = err
				st.mu.Unlock()
				emu.Lock()
				errs = append(errs, fmt.Errorf("pid %d: %w", pid, err))
				emu.Unlock()
			}()
		}
	}
	wg.Wait()
	b.prev = nil
	return errors.Join(errs...)
}

// same reports whether the claim old, of the Binder this one renews,
// was of the process pid is now, p (key its anon.TimelineKey), told the
// same: the same process (its start time), the same timeline key,
// nothing embedded. Its claim then stands while the files its handlers
// looked for are unchanged (anon.Reads.Unchanged): they would read what
// they read, and claim and name as they did; and a perf map appended to
// is read from where the claim stopped (anon.Extend).
func (b *Binder) same(pid uint32, p *anon.Process, key string, old *procState) bool {
	if old.reads == nil || key != old.key || len(p.Embedded) > 0 {
		return false
	}
	id, err := b.opts.Proc.Identity(int(pid))
	return err == nil && id.StartTime == old.proc.StartTime
}
