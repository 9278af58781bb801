package unwind

import (
	"sync"

	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/trust"
)

// Mappings is what an Unwinder asks of processes: the executable
// mapping that held an address of a process at a time (a
// *process.Tracker answers it).
type Mappings interface {
	Lookup(pid uint32, addr, time uint64, kernel bool) *process.Mapping
}

// JITInfo is what the JITs' own data says of their code (jitdump's
// unwinding records; the names of their handlers): the table of the
// code at addr of process pid at time and the bias of its addresses, and
// whether a handler names that code. It may be called from several
// goroutines at once.
type JITInfo interface {
	UnwindTable(pid uint32, addr, time uint64) (t *Table, bias uint64, ok bool)
	Named(pid uint32, addr, time uint64) bool
}

// Options configure an Unwinder.
type Options struct {
	// Symbolizer finds the images, as it finds them to name their
	// functions (separate debug files by build-id and debuglink,
	// MiniDebugInfo, the vDSO).
	Symbolizer *symbolize.Symbolizer
	// Procs holds the processes' mappings over time.
	Procs Mappings
	// JIT, when set, gives the tables of JIT code.
	JIT JITInfo
	// Cache keeps each image's table in jitprof's cache directory, by
	// what it is made of, as the symbolizer keeps function tables.
	Cache bool
	// MaxFrames bounds a chain; 0 means DefaultMaxFrames.
	MaxFrames int
	// Cred, when set, says whose rights the images process pid mapped
	// are opened with (symbolize.Symbolizer.OpenAs): a collector running
	// as root reads a user's images as that user. Without it they are
	// read with the rights of the user running jitprof, as a report
	// reads a recording's.
	Cred func(pid uint32) trust.Cred
}

// DefaultMaxFrames is perf's limit (kernel.perf_event_max_stack).
const DefaultMaxFrames = 127

// Unwinder unwinds samples of the processes Procs knows, keeping the
// tables of the images it meets for the samples that follow. It is safe
// for concurrent use; each goroutine unwinds through a Walker of its own.
type Unwinder struct {
	opts   Options
	mu     sync.Mutex
	tables map[*symbolize.Image]*tableSlot
	// held is the memory of the tables built or read so far.
	held int64
	// stops counts why chains ended, for the report's header.
	statsMu sync.Mutex
	stats   Stats
}

type tableSlot struct {
	once sync.Once
	t    *Table
	err  error
}

// Stats counts the chains unwound, by how they ended.
type Stats struct {
	Chains uint64
	Stops  [numStops]uint64
}

// New returns an Unwinder.
func New(opts Options) *Unwinder {
	if opts.MaxFrames <= 0 {
		opts.MaxFrames = DefaultMaxFrames
	}
	return &Unwinder{opts: opts, tables: map[*symbolize.Image]*tableSlot{}}
}

// Stats returns the counts of the chains unwound so far by all Walkers
// that were Flushed.
func (u *Unwinder) Stats() Stats {
	u.statsMu.Lock()
	defer u.statsMu.Unlock()
	return u.stats
}

// table returns the table of im, built (or read from the cache) once.
func (u *Unwinder) table(im *symbolize.Image) (*Table, error) {
	u.mu.Lock()
	s := u.tables[im]
	if s == nil {
		s = &tableSlot{}
		u.tables[im] = s
	}
	u.mu.Unlock()
	s.once.Do(func() {
		s.t, s.err = imageTable(im, u.opts.Cache)
		if s.t != nil {
			u.mu.Lock()
			u.held += s.t.Size()
			u.mu.Unlock()
		}
	})
	return s.t, s.err
}

// Held says how many images' tables the Unwinder holds and their memory
// in bytes: a collector that runs for weeks starts a new Unwinder past
// its bound.
func (u *Unwinder) Held() (images int, bytes int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.tables), u.held
}

// Walker unwinds for one goroutine: it is the address space of the
// sample being unwound, and keeps the tables of the mappings it met.
type Walker struct {
	u    *Unwinder
	pid  uint32
	time uint64
	// byID and byMap are the tables of the mappings met, by
	// process.Mapping.ID: the first directMappings IDs (a report's, most
	// often all of them) by index, the rest in a map, since a
	// collector's IDs grow for as long as it runs; mappings counts them.
	byID     []mapTable
	byMap    map[int32]mapTable
	mappings int
	stats    Stats
	// epochs, when Procs can say them, are the epochs of the processes'
	// address spaces; known is what was found at the addresses of the
	// chains unwound in them.
	epochs epochs
	known  *knownRows
	// seen is the chain's own cache, or says to ask known.
	seen places
}

// epochs is what a Mappings may say besides (a *process.Tracker does):
// the spans of time in which every address of a process has the same
// mapping (process.Tracker.Epoch), which hold until Version changes.
type epochs interface {
	Epoch(pid uint32, time uint64) process.Span
	Version() uint64
}

// knownRows keeps, across samples, what the code at an address of a
// process was and its rows there: a chain's own cache (places) sees each
// address once or twice, but the samples of a program walk the same
// return addresses over and over, each one a mapping lookup, a
// translation to the image's addresses and a binary search of its rows
// (a third of unwinding a recording of 1.4 million samples). The rows of
// an address hold for as long as the process's epoch does, at one
// version of the processes; JIT code, whose tables and names the JIT
// data gives by time, is not kept.
type knownRows struct {
	version uint64 // of Procs, as the last sample saw it
	gen     uint64 // counts the versions seen: entries of another are stale
	pid     uint32 // the sample's process and its epoch
	epoch   uint64
	spans   [numSpans]epochSpan
	rows    [numKnown]knownRow
}

// epochSpan is the epoch of a process over a span of time.
type epochSpan struct {
	sp  process.Span
	pid uint32
	gen uint64
}

type knownRow struct {
	addr, epoch, gen uint64
	code             Code
	rs               *ruleset
	pid              uint32
	ok               bool
}

// numSpans and numKnown are the slots of knownRows, direct-mapped (by
// pid, and by address and pid): a few thousand return addresses cover
// the hot paths of most programs.
const (
	numSpans = 64
	numKnown = 4096
)

// setEpoch finds the epoch of the sample about to be unwound, and says
// whether knownRows may serve it: only while the processes' version
// holds from one sample to the next, as in a report's settled timeline;
// a collector's changes with every record, and asking epochs afresh at
// each would cost more than it saves.
func (w *Walker) setEpoch(pid uint32, time uint64) bool {
	k := w.known
	if v := w.epochs.Version(); v != k.version || k.gen == 0 {
		k.version = v
		k.gen++
		return false
	}
	s := &k.spans[pid%numSpans]
	if s.gen != k.gen || s.pid != pid || time < s.sp.From || time >= s.sp.To {
		*s = epochSpan{sp: w.epochs.Epoch(pid, time), pid: pid, gen: k.gen}
	}
	k.pid, k.epoch = pid, s.sp.Epoch
	return true
}

// at returns the slot of addr in the sample's process.
func (k *knownRows) at(addr uint64) *knownRow {
	return &k.rows[(addr^addr>>12^uint64(k.pid)*0x9e37)%numKnown]
}

// holds reports whether r, addr's slot, holds what was found at addr in
// the sample's process and epoch.
func (r *knownRow) holds(k *knownRows, addr uint64) bool {
	return r.gen == k.gen && r.addr == addr && r.pid == k.pid && r.epoch == k.epoch
}

// keep keeps in r, addr's slot, what was found at addr.
func (k *knownRows) keep(r *knownRow, addr uint64, code Code, rs *ruleset, ok bool) {
	*r = knownRow{addr: addr, epoch: k.epoch, pid: k.pid, gen: k.gen, ok: ok, code: code, rs: rs}
}

type mapTable struct {
	im  *symbolize.Image // nil when the image could not be opened
	t   *Table
	set bool
}

// directMappings is how many mapping IDs a Walker indexes directly.
const directMappings = 1 << 16

// Walker returns a Walker of u's.
func (u *Unwinder) Walker() *Walker {
	w := &Walker{u: u, byMap: map[int32]mapTable{}}
	if e, ok := u.opts.Procs.(epochs); ok {
		w.epochs, w.known = e, &knownRows{}
	}
	return w
}

// Mappings is how many mappings the Walker keeps the tables of.
func (w *Walker) Mappings() int { return w.mappings }

// mapTable returns the tables of mapping m, opening its image the first
// time.
func (w *Walker) mapTable(m *process.Mapping) mapTable {
	var mt mapTable
	if m.ID < directMappings {
		if int(m.ID) >= len(w.byID) {
			w.byID = append(w.byID, make([]mapTable, int(m.ID)+1-len(w.byID))...)
		}
		mt = w.byID[m.ID]
	} else {
		mt = w.byMap[m.ID]
	}
	if mt.set {
		return mt
	}
	mt.set = true
	cred := trust.Unknown
	if w.u.opts.Cred != nil {
		cred = w.u.opts.Cred(w.pid)
	}
	if im, err := w.u.opts.Symbolizer.OpenAs(m.Path, m.BuildID, cred); err == nil {
		mt.im = im
		mt.t, _ = w.u.table(im)
	}
	if m.ID < directMappings {
		w.byID[m.ID] = mt
	} else {
		w.byMap[m.ID] = mt
	}
	w.mappings++
	return mt
}

// Unwind unwinds a sample of process pid taken at time, appending its
// frames' pcs to out (the sampled pc first), and says why it stopped.
func (w *Walker) Unwind(pid uint32, time uint64, regs Regs, stack *Stack, out []uint64) ([]uint64, Stop) {
	w.pid, w.time = pid, time
	w.seen.w, w.seen.valid = nil, 0
	if w.known != nil && w.setEpoch(pid, time) {
		w.seen.w = w
	}
	out, stop := unwind(regs, stack, w, &w.seen, out, w.u.opts.MaxFrames)
	w.stats.Chains++
	w.stats.Stops[stop]++
	return out, stop
}

// Uncount takes out of the Walker's counts a chain it unwound that
// ended in stop: a report that unwinds a sample again (a record that
// came later in the file changed its process's mappings at its time)
// counts its chain once. It must come before the Walker's next Flush.
func (w *Walker) Uncount(stop Stop) {
	w.stats.Chains--
	w.stats.Stops[stop]--
}

// Flush adds the Walker's counts to its Unwinder's Stats.
func (w *Walker) Flush() {
	w.u.statsMu.Lock()
	defer w.u.statsMu.Unlock()
	w.u.stats.Chains += w.stats.Chains
	for i, n := range w.stats.Stops {
		w.u.stats.Stops[i] += n
	}
	w.stats = Stats{}
}

// Code is the AddressSpace of the sample being unwound.
func (w *Walker) Code(pc uint64) (Code, bool) {
	m := w.u.opts.Procs.Lookup(w.pid, pc, w.time, false)
	if m == nil {
		return Code{}, false
	}
	if m.Anon {
		c := Code{JIT: true}
		if jit := w.u.opts.JIT; jit != nil {
			c.Table, c.Bias, _ = jit.UnwindTable(w.pid, pc, w.time)
			c.Named = jit.Named(w.pid, pc, w.time)
		}
		return c, true
	}
	mt := w.mapTable(m)
	if mt.im == nil {
		return Code{}, true
	}
	vaddr, ok := mt.im.FileOffsetToAddr(pc - m.Start + m.Pgoff)
	if !ok {
		return Code{}, true
	}
	return Code{Table: mt.t, Bias: pc - vaddr}, true
}
