package symbolize

import (
	"cmp"
	"debug/elf"
	"slices"
	"strings"
	"sync/atomic"
)

// Symbol is a named address range.
type Symbol struct {
	Name   string // demangled unless the image was loaded with raw names
	Start  uint64 // ELF virtual address (kernel: runtime address)
	Size   uint64
	Module string // kernel module, without brackets; empty for the core kernel and images
}

// candidate is a symbol as read from one source, before aliases are merged.
type candidate struct {
	name  string
	start uint64
	size  uint64
	bind  elf.SymBind
	limit uint64 // end of the section holding it: bounds sizeless symbols
	mod   string
}

type entry struct {
	start, end uint64
	name       uint32
	mod        uint32 // index into names; 0 means none
}

// table is a sorted, non-overlapping-by-start symbol table with interned
// names; a lookup is one binary search.
type table struct {
	entries   []entry
	names     []string
	demangled []atomic.Pointer[string]
	raw       bool
}

// newTable merges candidates into a table. Aliases at one address become one
// entry, so every sample at that address is counted under one stable name.
func newTable(cands []candidate, raw bool) *table {
	slices.SortFunc(cands, func(a, b candidate) int {
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		return betterAlias(a, b)
	})
	t := &table{raw: raw, names: []string{""}}
	ids := map[string]uint32{"": 0}
	intern := func(s string) uint32 {
		if id, ok := ids[s]; ok {
			return id
		}
		id := uint32(len(t.names))
		t.names = append(t.names, s)
		ids[s] = id
		return id
	}
	t.entries = make([]entry, 0, len(cands))
	limits := make([]uint64, 0, len(cands))
	for i := 0; i < len(cands); {
		best := cands[i]
		size, limit := best.size, best.limit
		j := i + 1
		for ; j < len(cands) && cands[j].start == best.start; j++ {
			size = max(size, cands[j].size)
			limit = max(limit, cands[j].limit)
		}
		if best.size != 0 {
			size = best.size
		}
		t.entries = append(t.entries, entry{start: best.start, end: best.start + size, name: intern(best.name), mod: intern(best.mod)})
		limits = append(limits, limit)
		i = j
	}
	// Symbols without a size (hand-written assembly, kallsyms) run to the
	// next symbol, but not past the end of their section.
	for i := range t.entries {
		e := &t.entries[i]
		if e.end > e.start {
			continue
		}
		e.end = limits[i]
		if i+1 < len(t.entries) && (e.end <= e.start || t.entries[i+1].start < e.end) {
			e.end = t.entries[i+1].start
		}
		e.end = max(e.end, e.start)
	}
	t.demangled = make([]atomic.Pointer[string], len(t.names))
	return t
}

// betterAlias orders aliases at one address, best first. Global beats weak
// beats local because the exported name is the one users call (malloc, not
// a file-local helper at the same address); then fewer leading underscores
// and a shorter name, because glibc's internal aliases (__libc_malloc,
// __GI___libc_write) are longer, underscored spellings of the public name;
// then bytewise order so the choice never depends on input order.
func betterAlias(a, b candidate) int {
	rank := func(b elf.SymBind) int {
		switch b {
		case elf.STB_GLOBAL:
			return 0
		case elf.STB_WEAK:
			return 1
		}
		return 2
	}
	if c := cmp.Compare(rank(a.bind), rank(b.bind)); c != 0 {
		return c
	}
	us := func(s string) int { return len(s) - len(strings.TrimLeft(s, "_")) }
	if c := cmp.Compare(us(a.name), us(b.name)); c != 0 {
		return c
	}
	if c := cmp.Compare(len(a.name), len(b.name)); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

func (t *table) lookup(addr uint64) (Symbol, bool) {
	i, found := slices.BinarySearchFunc(t.entries, addr, func(e entry, a uint64) int { return cmp.Compare(e.start, a) })
	if !found {
		i--
	}
	if i < 0 || addr >= t.entries[i].end {
		return Symbol{}, false
	}
	e := t.entries[i]
	return Symbol{Name: t.name(e.name), Start: e.start, Size: e.end - e.start, Module: t.names[e.mod]}, true
}

// name demangles lazily: most symbols of a large library are never sampled.
func (t *table) name(id uint32) string {
	if t.raw {
		return t.names[id]
	}
	if p := t.demangled[id].Load(); p != nil {
		return *p
	}
	s := Demangle(t.names[id])
	t.demangled[id].Store(&s)
	return s
}
