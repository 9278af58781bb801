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
}

type mapTable struct {
	im  *symbolize.Image // nil when the image could not be opened
	t   *Table
	set bool
}

// directMappings is how many mapping IDs a Walker indexes directly.
const directMappings = 1 << 16

// Walker returns a Walker of u's.
func (u *Unwinder) Walker() *Walker { return &Walker{u: u, byMap: map[int32]mapTable{}} }

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
	out, stop := Unwind(regs, stack, w, out, w.u.opts.MaxFrames)
	w.stats.Chains++
	w.stats.Stops[stop]++
	return out, stop
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
