package anon

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/jitprof/jitprof/internal/codemap"
	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/pypylog"
)

// pypyHandler names the loops and bridges of PyPy's JIT from PyPy's log
// (package pypylog): the jit-backend-addr sections say where each one's
// machine code is and when it appeared, the jit-log-opt sections which
// Python function, file and line each part of it came from. The user
// names the log with --pypylog (WithPyPyLog); the built-in alone, without
// a log, only says so for PyPy processes.
//
// The log is stamped with the TSC; the recording's TSC calibration (see
// jitbundle.KindTSC) places its loops on the samples' clock, so a range
// of code reused by a later loop is charged by time. A recording without
// one (Linux perf's) is resolved without times, as a perf map is: where
// two loops used one range the report lists both names.
type pypyHandler struct {
	log string // the --pypylog FILE, "%d" standing for the pid

	mu   sync.Mutex
	logs map[string]*pypyLog // by data path: a log read once serves every process it names
}

type pypyLog struct {
	log *pypylog.Log
	err error
}

func (*pypyHandler) Name() string { return "pypy" }

// WithPyPyLog returns hs with the pypy handler reading the log at path,
// the FILE of PYPYLOG (where "%d" stands for the pid of each process, as
// PyPy expands it), in place of the built-in pypy handler or, when hs
// has none, last.
func WithPyPyLog(hs []Handler, path string) []Handler {
	h := &pypyHandler{log: path}
	out := make([]Handler, 0, len(hs)+1)
	replaced := false
	for _, old := range hs {
		if old.Name() == h.Name() {
			out, replaced = append(out, h), true
			continue
		}
		out = append(out, old)
	}
	if !replaced {
		out = append(out, h)
	}
	return out
}

// PyPySeq is the kind of the data the daemon keeps of a PyPy log in its
// session: a jitdump of the loops and bridges it read from the log as the
// log grew, each with the sequence number the daemon gave it (its
// code_index, which the process's sample files keep) and its name as the
// log names it (pypylog.Follower).
const PyPySeq = "pypy-seq"

// IsPyPy reports whether p runs PyPy, whose log is worth looking for:
// its command or an image it maps (Debian's /usr/bin/pypy3.9 and
// libpypy3.9-c.so, PyPy's own bin/pypy3.10 and libpypy3.10-c.so) says
// so.
func (p *Process) IsPyPy() bool {
	if strings.HasPrefix(p.Comm, "pypy") {
		return true
	}
	for _, m := range p.Mappings {
		b := filepath.Base(m.Path)
		if strings.HasPrefix(b, "libpypy") || strings.HasPrefix(b, "pypy") {
			return true
		}
	}
	return false
}

func (h *pypyHandler) Claim(p *Process) (Resolver, error) {
	for path, kind := range p.Kinds {
		if kind == PyPySeq {
			return pypySeqClaim(p, path)
		}
	}
	if !p.IsPyPy() {
		return nil, nil
	}
	var paths []string
	if h.log == "" {
		// The log jitprof record embedded, from the PYPYLOG of the
		// command it ran.
		for path, kind := range p.Kinds {
			if kind == h.Name() {
				paths = append(paths, path)
			}
		}
		slices.Sort(paths)
		if len(paths) == 0 {
			return nil, fmt.Errorf("%w: no PyPy log given or embedded: run pypy with PYPYLOG=jit-backend-addr,jit-log-opt:FILE under jitprof record, or report with --pypylog FILE", ErrNoData)
		}
	}
	for _, pid := range pids(p) {
		if h.log != "" {
			paths = append(paths, strings.Replace(h.log, "%d", itoa(int(pid)), 1))
		}
	}
	d, err := findData(p, uniq(paths))
	if err != nil {
		return nil, err
	}
	defer d.close()
	l, err := h.read(d)
	if err != nil {
		return nil, err
	}
	if len(l.Codes) == 0 {
		return nil, fmt.Errorf("%s: %w: the log names no loops (PYPYLOG needs jit-backend-addr)", d.path, ErrNoData)
	}
	inside := 0
	for _, c := range l.Codes {
		for _, m := range p.Mappings {
			if m.JIT() && m.Start <= c.Start && c.End <= m.End {
				inside++
				break
			}
		}
	}
	if inside == 0 {
		return nil, fmt.Errorf("%s: %w: none of its %d loops and bridges lies in the JIT memory of pid %d: the log of another process or run", d.path, ErrNoData, len(l.Codes), p.PID)
	}

	clock, clockNote := pypyClock(p)
	b := codemap.NewBuilder()
	names := l.Names()
	for i, c := range l.Codes {
		var t uint64
		if clock != nil {
			t = clock.Nanos(c.Time)
		}
		if err := b.Load(t, c.Start, c.End-c.Start, names[i], 0, payload(pypyLines(l, i), nil)); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", d.path, c.Line, err)
		}
	}
	src := d.describe("pypy") + ", " + clockNote
	if l.Cut {
		src += "; " + l.Warnings[0]
	}
	return &mapResolver{m: b.Build(), source: src, timeless: clock == nil}, nil
}

// pypySeqClaim names a session's PyPy code from the numbered dump the
// daemon wrote (PyPySeq) at path.
func pypySeqClaim(p *Process, path string) (Resolver, error) {
	b := p.Embedded[path]
	d := &data{path: path, embedded: true, r: bytes.NewReader(b), size: int64(len(b))}
	m, _, err := readJitdump(d, p, false)
	if err != nil {
		return nil, err
	}
	return pypySeqResolver{&mapResolver{m: m, source: "pypy " + strings.TrimSuffix(path, ".seq") + " (read by the daemon as it grew)"}}, nil
}

// pypySeqResolver resolves by the daemon's sequence numbers, which tell
// the generations of code at one address apart, as times do for a
// recording; a name is the log's, "f [loop 3]", as a recording's report
// names it, without the number.
type pypySeqResolver struct{ *mapResolver }

func (r pypySeqResolver) Resolve(addr, t uint64) (Symbol, bool) {
	s, ok := r.mapResolver.Resolve(addr, t)
	s.Gen = 0
	return s, ok
}

func (r pypySeqResolver) ResolveSeq(addr, seq uint64) (Symbol, bool) {
	s, ok := r.mapResolver.ResolveSeq(addr, seq)
	s.Gen = 0
	return s, ok
}

// read reads the log of d once for all the processes that claim it.
func (h *pypyHandler) read(d *data) (*pypylog.Log, error) {
	key := d.path
	if d.embedded {
		key = "embedded:" + key
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.logs == nil {
		h.logs = map[string]*pypyLog{}
	}
	if pl, ok := h.logs[key]; ok {
		return pl.log, pl.err
	}
	l, err := pypylog.Read(d.reader(), pypylog.Options{})
	if err != nil {
		err = fmt.Errorf("%s: %w", d.path, err)
	}
	h.logs[key] = &pypyLog{log: l, err: err}
	return l, err
}

// TSCClock is the clock a recording's TSC calibration entry (data of a
// jitbundle.KindTSC entry) gives: PyPy's TSC stamps to CLOCK_MONOTONIC.
func TSCClock(raw []byte) (*pypylog.Clock, error) {
	pairs, err := jitbundle.DecodeTSC(raw)
	if err != nil {
		return nil, err
	}
	ps := make([]pypylog.Pair, len(pairs))
	for i, q := range pairs {
		ps[i] = pypylog.Pair{Tick: q.TSC, Nanos: q.Nanos}
	}
	return pypylog.NewClock(ps)
}

// pypyClock returns the recording's TSC calibration for p, or nil, and
// says which for the resolver's Source.
func pypyClock(p *Process) (*pypylog.Clock, string) {
	const timeless = "resolved without times"
	raw, ok := p.Embedded[jitbundle.TSCPath]
	if !ok {
		return nil, "no TSC calibration in the recording (jitprof record writes one): " + timeless
	}
	clock, err := TSCClock(raw)
	if err != nil {
		return nil, fmt.Sprintf("the recording's TSC calibration is unusable (%v): %s", err, timeless)
	}
	return clock, "times by the recording's TSC calibration"
}

// pypyLines is the line table of code i: from its trace, the Python line
// each operation's machine code came from; before the first merge point,
// a loop's own line or the line of the guard a bridge leaves.
func pypyLines(l *pypylog.Log, i int) lineTable {
	c := &l.Codes[i]
	var lt lineTable
	add := func(off uint64, loc pypylog.Location) {
		if loc.File == "" {
			return
		}
		if n := len(lt); n > 0 && lt[n-1].file == loc.File && lt[n-1].line == loc.Line {
			return
		}
		lt = append(lt, lineRow{off: off, file: loc.File, line: loc.Line})
	}
	if !c.Bridge {
		add(0, c.Loc)
	} else if c.Parent >= 0 {
		parent := &l.Traces[c.Parent]
		for _, op := range parent.Ops {
			if op.Guard == c.Guard && op.Point >= 0 {
				add(0, l.Locations[parent.Points[op.Point].Loc])
				break
			}
		}
	}
	if c.Trace < 0 {
		return lt
	}
	tr := &l.Traces[c.Trace]
	for _, op := range tr.Ops {
		if op.Offset < 0 || op.Point < 0 {
			continue
		}
		at := c.Block + uint64(op.Offset)
		if at < c.Start || at >= c.End {
			continue
		}
		add(at-c.Start, l.Locations[tr.Points[op.Point].Loc])
	}
	return sortLines(lt)
}
