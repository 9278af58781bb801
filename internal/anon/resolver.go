package anon

import (
	"sort"

	"github.com/jitprof/jitprof/internal/codemap"
	"github.com/jitprof/jitprof/internal/unwind"
)

// mapResolver is the Resolver of the built-in handlers: a codemap built
// from the JIT's data.
type mapResolver struct {
	m      codeIndex
	source string
	// timeless data (perf maps, jitdumps stamped with an architecture
	// clock) cannot say which of several names at an address was live when
	// a sample hit, so resolve reports every name instead of guessing.
	timeless bool
}

func (r *mapResolver) Source() string { return r.source }
func (r *mapResolver) Close() error   { return nil }

func (r *mapResolver) Resolve(addr, t uint64) (Symbol, bool) {
	if r.timeless {
		es, start, end := r.m.Ambiguous(addr)
		switch len(es) {
		case 0:
			return Symbol{}, false
		case 1:
			s := symbol(es[0], addr)
			s.Load, s.Unload = 0, 0 // a timeless source's entries have none
			return s, true
		}
		names := make([]string, len(es))
		for i, e := range es {
			names[i] = e.Name
		}
		return Symbol{Start: start, Size: end - start, Ambiguous: names, Held: true}, true
	}
	e, ok := r.m.Lookup(addr, t)
	if !ok {
		return Symbol{}, false
	}
	return symbol(e, addr), true
}

func (r *mapResolver) ResolveSeq(addr, seq uint64) (Symbol, bool) {
	e, ok := r.m.LookupSeq(addr, seq)
	if !ok {
		return Symbol{}, false
	}
	return symbol(e, addr), true
}

func symbol(e *codemap.Entry, addr uint64) Symbol {
	s := Symbol{Name: e.Name, Start: e.Start, Size: e.End - e.Start, Gen: e.Gen, Load: e.Load, Unload: e.Unload, Held: true}
	if c, ok := e.Payload.(*codeInfo); ok {
		s.File, s.Line = c.lines.at(addr - e.Start)
		if uint64(len(c.code)) == s.Size {
			s.Code = c.code
		}
	}
	return s
}

// UnwindTable implements Unwinder: the unwinding information the JIT
// logged for the code live at addr at time t, with addresses relative to
// the code's start.
func (r *mapResolver) UnwindTable(addr, t uint64) (*unwind.Table, uint64, bool) {
	var e *codemap.Entry
	if r.timeless {
		es, _, _ := r.m.Ambiguous(addr)
		if len(es) != 1 {
			return nil, 0, false
		}
		e = es[0]
	} else {
		var ok bool
		if e, ok = r.m.Lookup(addr, t); !ok {
			return nil, 0, false
		}
	}
	c, ok := e.Payload.(*codeInfo)
	if !ok || c.unwind == nil {
		return nil, 0, false
	}
	return c.unwind, e.Start, true
}

// codeInfo is what a time-aware source knows of one load besides its
// name: its source lines, its machine code and its unwinding
// information, when the JIT logged them.
type codeInfo struct {
	lines  lineTable
	code   []byte
	unwind *unwind.Table // addresses from the code's start
}

// payload is the codemap payload of a load, or nil when it has nothing.
func payload(lines lineTable, code []byte) any {
	if len(lines) == 0 && len(code) == 0 {
		return nil
	}
	return &codeInfo{lines: lines, code: code}
}

// withUnwind adds an unwind table to a payload.
func withUnwind(pl any, t *unwind.Table) any {
	if t == nil {
		return pl
	}
	c, _ := pl.(*codeInfo)
	if c == nil {
		c = &codeInfo{}
	}
	c.unwind = t
	return c
}

// lineRow says the code from off (bytes from the start of the code) up to
// the next row came from file:line. Offsets, not addresses, so that a
// table survives a move of its code.
type lineRow struct {
	off  uint64
	file string
	line int
}

// lineTable is sorted by off.
type lineTable []lineRow

func (lt lineTable) at(off uint64) (string, int) {
	i := sort.Search(len(lt), func(i int) bool { return lt[i].off > off })
	if i == 0 {
		return "", 0
	}
	return lt[i-1].file, lt[i-1].line
}

func sortLines(lt lineTable) lineTable {
	sort.SliceStable(lt, func(i, j int) bool { return lt[i].off < lt[j].off })
	return lt
}
