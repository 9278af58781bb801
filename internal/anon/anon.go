package anon

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/internal/unwind"
)

// Process is what a handler sees of a recorded process.
type Process struct {
	// PID is the process id as recorded (the profiler's pid namespace).
	PID int
	// NSPID is the pid the process has in its own pid namespace, which is
	// the pid a JIT inside a container writes into its file names; equal
	// to PID outside containers, 0 when unknown.
	NSPID int
	// Comm is the process's command name.
	Comm string
	// Root is where the process's own files are seen, /proc/PID/root while
	// it lives; "" means the host's root. Paths under Root are resolved
	// inside it, as the process sees them (internal/trust).
	Root string
	// UID is the process's user, as the recorder saw it: JIT data files
	// owned by anyone else are refused (internal/trust), root's too.
	// trust.UnknownOwner accepts only the files of the user running
	// jitprof.
	UID int
	// GID is the process's group, as the recorder saw it; with UID, whom
	// external handlers run as when jitprof runs as root.
	// trust.UnknownOwner when not known.
	GID int
	// StartTime is the process's start time (field 22 of /proc/PID/stat)
	// when the recording says it, 0 when not: FillLive uses it to tell
	// the process from a later one with its pid.
	StartTime uint64
	// Mappings are the process's mappings over the recording, in time
	// order; JIT data files such as jitdump's marker mapping appear here.
	Mappings []Mapping
	// Embedded is JIT data the recorder copied into the recording, by the
	// path it had; handlers prefer it to files that may be gone or newer.
	Embedded map[string][]byte
	// Kinds says which handler's data each Embedded path is (the
	// recorder's entry kinds: "pypy" for a PyPy log, which no fixed path
	// names).
	Kinds map[string]string
	// PyPyLog is the FILE of the PYPYLOG the process was started with
	// ("%d" for its pid), where the recorder knows it (the command it
	// ran): jitprof record embeds the log.
	PyPyLog string
	// Force overrides the trust checks (the report's --force).
	Force bool
	// Exe is the file the process executed, as the recording names it;
	// "" for the file of its first executable mapping (Executable).
	// External handlers of protocol version 2 get it.
	Exe string
	// Span is the recording's time range; zero when unknown. External
	// handlers of protocol version 2 get it.
	Span TimeRange
	// Reads, when set, records the JIT data files the handlers look for
	// as they claim the process (anonbind keeps a claim while they are
	// unchanged).
	Reads *Reads
}

// TimeRange is a span of time in the recording's clock (that of
// Resolver.Resolve's t), in nanoseconds: From its first record to To,
// its last.
type TimeRange struct{ From, To uint64 }

// Mapping is one mapping of a process, from an MMAP/MMAP2 record.
type Mapping struct {
	Start, End, Pgoff uint64
	Time              uint64 // when it was mapped, in the recording's clock
	Path              string // a file, or anonymous memory: "//anon", "/dev/zero (deleted)", "/memfd:NAME (deleted)", "[anon:NAME]"
	// Anon says the mapping is anonymous memory, as perf judges it
	// (perfdata.IsAnon, which the MMAP2 record's flags take part in:
	// MAP_HUGETLB memory is anonymous whatever its name).
	Anon bool
	Exec bool
}

// JIT reports whether the mapping is where JIT compilers put their
// code: anonymous executable memory, a memfd or huge pages included.
func (m Mapping) JIT() bool { return m.Anon && m.Exec }

// MappingOf is m as handlers see it.
func MappingOf(m *process.Mapping) Mapping {
	return Mapping{Start: m.Start, End: m.End, Pgoff: m.Pgoff, Time: m.Time, Path: m.Path, Anon: m.Anon, Exec: m.Exec}
}

// NewProcess is process pid as handlers see it, from what a source knows
// of it: its command name, its mappings (a process.Tracker's) and, when
// known (id not nil), who it is. Its pid in its own namespace is pid
// unless id says another; its user and group are trust.UnknownOwner
// while unknown, until FillLive finds the process running.
func NewProcess(pid uint32, comm string, maps []*process.Mapping, id *linux.Identity) Process {
	p := Process{PID: int(pid), NSPID: int(pid), Comm: comm, UID: trust.UnknownOwner, GID: trust.UnknownOwner}
	if id != nil {
		p.UID, p.GID, p.StartTime = id.UID, id.GID, id.StartTime
		if id.NSPID != 0 {
			p.NSPID = id.NSPID
		}
	}
	if len(maps) > 0 {
		p.Mappings = make([]Mapping, len(maps))
		for i, m := range maps {
			p.Mappings[i] = MappingOf(m)
		}
	}
	return p
}

// Symbol is what a resolver says of an address.
type Symbol struct {
	Name        string
	Start, Size uint64 // the code's range when the sample hit it
	Gen         uint64 // the generation: jitdump's code_index, jitlog's sequence number
	File        string // source file, when the JIT data has lines
	Line        int
	Code        []byte // the machine code, when the JIT logged it (for annotate)
	// Load and Unload are when the code was there, in the recording's
	// clock, from sources that have times; Unload is codemap.Forever
	// while it still is. Both are 0 when the source has no times.
	Load, Unload uint64
	// Held says the resolver gives this answer for the address at every
	// time in [Load, Unload), or at every time when the source has no
	// times (the built-in handlers' data): a caller may take it for the
	// other samples there in that span without asking. An external
	// handler's answers say nothing of other times.
	Held bool
	// Ambiguous lists the names a timeless source (a perf map) gives the
	// range when code was re-generated there; Name is then empty, and
	// the report says the data cannot tell them apart.
	Ambiguous []string
}

// Found reports whether s names anything: every symbol a resolver returns
// covers a non-empty range, so the zero Symbol is "not found".
func (s Symbol) Found() bool { return s.Size > 0 }

// Query is one anonymous sample to resolve.
type Query struct {
	Addr, Time uint64
}

// BatchResolver is implemented by resolvers for which one call per sample
// is costly (external handlers: one round trip per batch instead of per
// address). Use ResolveBatch rather than asserting it.
type BatchResolver interface {
	// ResolveBatch returns one Symbol per query, in order; a Symbol that
	// is not Found means the address is unknown at that time.
	ResolveBatch(qs []Query) []Symbol
}

// SeqResolver is implemented by resolvers whose data numbers every
// generation of code (jitlog): the sample database stores (address,
// sequence number) instead of times, and resolves with ResolveSeq.
type SeqResolver interface {
	ResolveSeq(addr, seq uint64) (Symbol, bool)
}

// Unwinder is implemented by resolvers whose data carries the JIT's
// unwinding information (jitdump's CODE_UNWINDING_INFO): the call frame
// table of the code live at addr at time t, and the address its rows
// count from.
type Unwinder interface {
	UnwindTable(addr, t uint64) (table *unwind.Table, base uint64, ok bool)
}

// ResolveBatch resolves qs with r in one batch when r supports it, and one
// query at a time otherwise.
func ResolveBatch(r Resolver, qs []Query) []Symbol {
	if b, ok := r.(BatchResolver); ok {
		return b.ResolveBatch(qs)
	}
	out := make([]Symbol, len(qs))
	for i, q := range qs {
		out[i], _ = r.Resolve(q.Addr, q.Time)
	}
	return out
}

// Resolver names the anonymous samples of one claimed process. Resolvers
// are safe for concurrent use: a report resolves in parallel.
type Resolver interface {
	// Resolve names the code at addr at time t (the sample's time in the
	// recording's clock, CLOCK_MONOTONIC for jitprof and perf -k mono).
	Resolve(addr, t uint64) (Symbol, bool)
	// Source says which data the names come from, for the report's header:
	// "jitdump /tmp/jit-123.dump (embedded in the recording)".
	Source() string
	// Close releases the resolver; for an external handler it also
	// reports the first protocol error met while resolving, since Resolve
	// has no error to return.
	Close() error
}

// Handler understands one JIT data format. Handlers are shared by every
// Claim, possibly concurrently, so they keep no per-process state: that
// belongs in the Resolver.
type Handler interface {
	Name() string
	// Claim returns a Resolver when the handler understands p's JIT data,
	// (nil, nil) when it does not, and an error wrapping ErrNoData when it
	// looked for its data and found none (the error says where it looked).
	Claim(p *Process) (Resolver, error)
}

// Builtins returns the built-in handlers, new ones at each call (the
// pypy handler caches the logs it reads), in the order they are tried
// when the user names none: the time-aware sources first, so a process
// that writes both a jitdump and a perf map is resolved by generation,
// not by last writer.
func Builtins() []Handler {
	return []Handler{jitlogHandler{}, jitdumpHandler{}, &pypyHandler{}, perfmapHandler{}}
}

// ErrNoData says a handler found none of its data for a process. Claim
// keeps such errors only when no handler claimed the process, so the user
// learns which paths were tried without noise for every other process.
var ErrNoData = errors.New("no JIT data found")

// ErrUnknownHandler is returned for a name that is neither built in nor an
// executable jitprof-anon-NAME.
var ErrUnknownHandler = errors.New("unknown anon handler")

// Select returns the handlers named by --anon-handler values, each of
// which may be a comma-separated list, in order; with no names, the
// Builtins. External handlers get the default time limits.
func Select(names []string) ([]Handler, error) { return ExternalOptions{}.Select(names) }

// Select is Select with o's time limits for the external handlers, which
// share one budget.
func (o ExternalOptions) Select(names []string) ([]Handler, error) {
	b := &budget{timeout: cmp.Or(o.Timeout, DefaultTimeout), total: cmp.Or(o.Budget, DefaultBudget)}
	builtins := Builtins()
	var list []string
	for _, n := range names {
		for _, part := range strings.Split(n, ",") {
			if part = strings.TrimSpace(part); part != "" {
				list = append(list, part)
			}
		}
	}
	if len(list) == 0 {
		return builtins, nil
	}
	var hs []Handler
	seen := map[string]bool{}
	for _, n := range list {
		if seen[n] {
			continue
		}
		seen[n] = true
		if i := slices.IndexFunc(builtins, func(h Handler) bool { return h.Name() == n }); i >= 0 {
			hs = append(hs, builtins[i])
			continue
		}
		h, err := findExternal(n, b)
		if err != nil {
			return nil, fmt.Errorf("--anon-handler=%s: %w (built in: %s)", n, err, strings.Join(builtinNames(builtins), ", "))
		}
		hs = append(hs, h)
	}
	return hs, nil
}

func builtinNames(hs []Handler) []string {
	var l []string
	for _, h := range hs {
		l = append(l, h.Name())
	}
	sort.Strings(l)
	return l
}

// ClaimError is a handler's failure to claim a process: its data was
// missing (ErrNoData), unusable, or the handler was not asked
// (ErrNotAsked).
type ClaimError struct {
	Handler string
	PID     int
	Err     error
}

func (e *ClaimError) Error() string {
	return fmt.Sprintf("anon handler %s, pid %d: %v", e.Handler, e.PID, e.Err)
}

func (e *ClaimError) Unwrap() error { return e.Err }

// Claim asks the handlers in order and returns the first resolver, the
// handler that claimed, and the errors (*ClaimError) of handlers that
// failed on the way (shown to the user; a later handler may still have
// claimed). ErrNoData errors are returned only when no handler claimed p.
func Claim(hs []Handler, p *Process) (Resolver, Handler, []error) {
	var errs, missing []error
	for _, h := range hs {
		r, err := h.Claim(p)
		if err != nil {
			err = &ClaimError{Handler: h.Name(), PID: p.PID, Err: err}
			if errors.Is(err, ErrNoData) {
				missing = append(missing, err)
			} else {
				errs = append(errs, err)
			}
			continue
		}
		if r != nil {
			return r, h, errs
		}
	}
	return nil, nil, append(errs, missing...)
}
