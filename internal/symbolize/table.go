package symbolize

import (
	"cmp"
	"debug/elf"
	"slices"
	"strings"
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
	limit uint64 // a sizeless symbol ends at the next candidate or here (section end; kallsyms: next symbol of any type, or the page end), whichever is first
	// open: the limit bounds the symbol only when no candidate follows
	// it; otherwise it runs to the next one past its section's end, as
	// perf's symbols__fixup_end has it (an ELF image's _init, sizeless in
	// .init, takes the PLT header after it: perf and objdump name it
	// _init+0x20).
	open bool
	mod  string
}

type entry struct {
	start, end uint64
	name       uint32
	mod        uint32 // index into names; 0 means none
}

// table is a symbol table sorted by start, one entry for each start, with
// interned names; a lookup is one binary search, and finds the last entry
// starting at or before the address if the address is below its end. An
// entry may reach past the next one's start, or be empty.
type table struct {
	entries   []entry
	names     []string
	demangled demangled
	raw       bool
}

// sortStable sorts cands by start, keeping the input order of equal
// starts. slices.SortStableFunc moves the 80-byte candidates by rotations
// (O(n log² n) moves), which was a third of loading libc's symbols;
// sorting indices and copying once is O(n log n).
func sortStable(cands []candidate) []candidate {
	if slices.IsSortedFunc(cands, func(a, b candidate) int { return cmp.Compare(a.start, b.start) }) {
		return cands
	}
	perm := make([]int32, len(cands))
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(a, b int32) int {
		return cmp.Or(cmp.Compare(cands[a].start, cands[b].start), cmp.Compare(a, b))
	})
	out := make([]candidate, len(cands))
	for i, p := range perm {
		out[i] = cands[p]
	}
	return out
}

// newTable merges candidates into a table as perf's symbols__fixup_end
// and symbols__fixup_duplicate do, so samples get perf's names: a
// sizeless symbol (assembly labels, kallsyms) runs to the next symbol,
// which for all but the last of several aliases is at its own address,
// and then one alias per address is kept (see betterAlias). Candidates
// at one address keep their input order (the symbol table's), which
// breaks ties as perf's does.
func newTable(cands []candidate, raw bool) *table {
	cands = sortStable(cands)
	for i := range cands {
		c := &cands[i]
		if c.size != 0 {
			continue
		}
		end := c.limit
		if i+1 < len(cands) && (end == 0 || c.open || cands[i+1].start < end) {
			end = cands[i+1].start
		}
		c.size = max(end, c.start) - c.start
	}
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
	for i := 0; i < len(cands); {
		best := cands[i]
		j := i + 1
		for ; j < len(cands) && cands[j].start == best.start; j++ {
			if betterAlias(cands[j], best) {
				best = cands[j]
			}
		}
		t.entries = append(t.entries, entry{start: best.start, end: best.start + best.size, name: intern(best.name), mod: intern(best.mod)})
		i = j
	}
	return t
}

// betterAlias reports whether b replaces a, the alias kept so far, by
// perf's choose_best_symbol: a symbol with a size, then not weak, then
// global, then fewer leading underscores, then the longer name; on a tie
// the earlier stays. So ld.so's mmap64 beats mmap, libc's local
// __GI___readdir64 beats the weak readdir, and of kallsyms' memcpy,
// __memcpy and __pi_memcpy the last listed, the only one with a size.
func betterAlias(b, a candidate) bool {
	if (a.size == 0) != (b.size == 0) {
		return a.size == 0
	}
	if aw, bw := a.bind == elf.STB_WEAK, b.bind == elf.STB_WEAK; aw != bw {
		return aw
	}
	if ag, bg := a.bind == elf.STB_GLOBAL, b.bind == elf.STB_GLOBAL; ag != bg {
		return bg
	}
	us := func(s string) int { return len(s) - len(strings.TrimLeft(s, "_")) }
	if ua, ub := us(a.name), us(b.name); ua != ub {
		return ub < ua
	}
	return len(b.name) > len(a.name)
}

// symtab is an image's or the kernel's function table: built from the
// files (table) or mapped from jitprof's cache of it (mappedTable).
type symtab interface {
	lookup(addr uint64) (Symbol, bool)
	// lookupSpan is lookup and the span of addresses it answers alike
	// (Kernel.LookupSpan).
	lookupSpan(addr uint64) (Symbol, uint64, uint64, bool)
	count() int
	rawNames() bool
	// hasName reports whether a function is named name, raw or shown.
	hasName(name string) bool
}

func (t *table) count() int     { return len(t.entries) }
func (t *table) rawNames() bool { return t.raw }
func (t *table) hasName(name string) bool {
	for _, e := range t.entries {
		if t.names[e.name] == name || t.name(e.name) == name {
			return true
		}
	}
	return false
}

func (t *table) lookup(addr uint64) (Symbol, bool) {
	s, _, _, ok := t.lookupSpan(addr)
	return s, ok
}

// lookupSpan is lookup and the span of addresses it answers alike
// (Kernel.LookupSpan).
func (t *table) lookupSpan(addr uint64) (Symbol, uint64, uint64, bool) {
	i, found := slices.BinarySearchFunc(t.entries, addr, func(e entry, a uint64) int { return cmp.Compare(e.start, a) })
	if !found {
		i--
	}
	if i < 0 || addr >= t.entries[i].end {
		return Symbol{}, 0, 0, false
	}
	e := t.entries[i]
	lo, hi := spanOf(len(t.entries), i, addr, func(j int) uint64 { return t.entries[j].start }, e.end)
	return Symbol{Name: t.name(e.name), Start: e.start, Size: e.end - e.start, Module: t.names[e.mod]}, lo, hi, true
}

// spanOf is the span of addresses that a table of n entries in order of
// start answers as it answers addr, with entry i ending at end: from
// the entry's start to its end or the next entry's start. Where a
// neighbour starts at the same address (lookup answers the first of
// them at that address and the last past it), or out of order (a
// damaged cache), the span is addr's alone.
func spanOf(n, i int, addr uint64, start func(int) uint64, end uint64) (uint64, uint64) {
	lo, hi := start(i), end
	if i > 0 && start(i-1) >= lo || i+1 < n && start(i+1) <= lo {
		return addr, addr + 1
	}
	if i+1 < n {
		hi = min(hi, start(i+1))
	}
	return lo, hi
}

// name demangles lazily: most symbols of a large library are never sampled.
func (t *table) name(id uint32) string {
	if t.raw {
		return t.names[id]
	}
	return t.demangled.name(id, len(t.names), t.names[id])
}
