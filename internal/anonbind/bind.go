package anonbind

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/session"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/perfdata"
)

// Options configure a Binder.
type Options struct {
	// Handlers are tried in order for each process (anon.Select).
	Handlers []anon.Handler
	// Force overrides the trust checks on JIT data files.
	Force bool
	// ProcRoot is where live processes are looked up, "/proc" by default;
	// tests point it elsewhere.
	ProcRoot string
}

// Claim says how one process's anonymous samples were named.
type Claim struct {
	PID     uint32
	Comm    string
	Handler string // "" when no handler claimed the process
	Source  string // the resolver's description of its data
	Errs    []error
	// Ambiguous lists the ranges a timeless source could not attribute
	// to one name, with the names.
	Ambiguous []Ambiguity
}

// Ambiguity is a range of code that several names claimed.
type Ambiguity struct {
	Start, End uint64
	Names      []string
}

// Binder is a session.AnonResolver backed by anon handlers.
type Binder struct {
	opts     Options
	procs    map[uint32]session.Process
	embedded map[uint32]map[string][]byte
	recorded map[uint32]jitbundle.Process // who each process was, as recorded

	mu    sync.Mutex
	state map[uint32]*procState
}

type procState struct {
	claim Claim
	r     anon.Resolver
	amb   map[uint64]int // range start -> index in claim.Ambiguous
}

// New prepares a Binder for the processes of tl, with the JIT data the
// recorder embedded in f (internal/jitbundle), if any: copies of JIT data
// files, and who each process was, by which any file still read from disk
// is judged.
func New(f *perfdata.File, tl *session.Timeline, opts Options) (*Binder, error) {
	if opts.ProcRoot == "" {
		opts.ProcRoot = "/proc"
	}
	b := &Binder{opts: opts, procs: map[uint32]session.Process{}, embedded: map[uint32]map[string][]byte{},
		recorded: map[uint32]jitbundle.Process{}, state: map[uint32]*procState{}}
	for _, p := range tl.Processes() {
		b.procs[p.PID] = p
	}
	bundle, err := jitbundle.Load(f)
	if err != nil {
		return nil, fmt.Errorf("jitprof's JIT data: %w", err)
	}
	if bundle != nil {
		for _, p := range bundle.Processes {
			b.recorded[uint32(p.PID)] = p
		}
		for _, e := range bundle.Files {
			pid := uint32(e.PID)
			if b.embedded[pid] == nil {
				b.embedded[pid] = map[string][]byte{}
			}
			b.embedded[pid][e.Path] = e.Data
		}
	}
	return b, nil
}

// Resolve implements session.AnonResolver.
func (b *Binder) Resolve(pid uint32, addr, time uint64) (session.AnonFrame, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.state[pid]
	if st == nil {
		st = b.claim(pid)
		b.state[pid] = st
	}
	if st.r == nil {
		return session.AnonFrame{}, false
	}
	sym, ok := st.r.Resolve(addr, time)
	if !ok || !sym.Found() {
		return session.AnonFrame{}, false
	}
	image := "[JIT " + st.claim.Handler + "] " + st.claim.Comm
	if len(sym.Ambiguous) > 0 {
		if _, seen := st.amb[sym.Start]; !seen {
			st.amb[sym.Start] = len(st.claim.Ambiguous)
			st.claim.Ambiguous = append(st.claim.Ambiguous, Ambiguity{Start: sym.Start, End: sym.Start + sym.Size, Names: sym.Ambiguous})
		}
		return session.AnonFrame{Func: "[ambiguous: " + strings.Join(sym.Ambiguous, " | ") + "]", Image: image, Start: sym.Start}, true
	}
	name := sym.Name
	if sym.Gen != 0 {
		// Time-aware sources tell generations apart; so does the report,
		// because re-generated code is different code.
		name += " [gen " + strconv.FormatUint(sym.Gen, 10) + "]"
	}
	return session.AnonFrame{Func: name, Image: image, Start: sym.Start, File: sym.File, Line: sym.Line, Code: sym.Code}, true
}

func (b *Binder) claim(pid uint32) *procState {
	sp := b.procs[pid]
	p := &anon.Process{PID: int(pid), NSPID: int(pid), Comm: sp.Comm, UID: trust.UnknownOwner, Embedded: b.embedded[pid], Force: b.opts.Force}
	if rp, ok := b.recorded[pid]; ok {
		p.UID, p.StartTime = rp.UID, rp.StartTime
		if rp.NSPID != 0 {
			p.NSPID = rp.NSPID
		}
	}
	for _, m := range sp.Mappings {
		p.Mappings = append(p.Mappings, anon.Mapping{Start: m.Start, End: m.End, Pgoff: m.Pgoff, Time: m.Time, Path: m.Path, Exec: m.Exec})
	}
	p.FillLive(b.opts.ProcRoot)
	st := &procState{claim: Claim{PID: pid, Comm: sp.Comm}, amb: map[uint64]int{}}
	r, h, errs := anon.Claim(b.opts.Handlers, p)
	st.claim.Errs = errs
	if r != nil {
		st.r = r
		st.claim.Handler = h.Name()
		st.claim.Source = r.Source()
	}
	return st
}

// Claims returns how each process with anonymous samples was handled, by
// pid.
func (b *Binder) Claims() []Claim {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := make([]Claim, 0, len(b.state))
	for _, st := range b.state {
		l = append(l, st.claim)
	}
	sort.Slice(l, func(i, j int) bool { return l[i].PID < l[j].PID })
	return l
}

// Close closes the resolvers (external handlers are processes).
func (b *Binder) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for pid, st := range b.state {
		if st.r != nil {
			if err := st.r.Close(); err != nil {
				errs = append(errs, fmt.Errorf("pid %d: %w", pid, err))
			}
		}
	}
	return errors.Join(errs...)
}
