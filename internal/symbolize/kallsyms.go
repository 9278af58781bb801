package symbolize

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/jitprof/jitprof/internal/kallsyms"
	"github.com/jitprof/jitprof/internal/linux"
)

// Kernel is the kernel's symbol table from kallsyms, modules included.
type Kernel struct {
	syms   *table
	mapped *mappedTable // instead of syms, from the cache (kcache.go)
}

// LoadKallsyms reads a kallsyms file such as /proc/kallsyms.
func LoadKallsyms(path string, opts LoadOptions) (*Kernel, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("kallsyms: %w", err)
	}
	defer f.Close()
	k, err := ParseKallsyms(f, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// kernelPage bounds the last symbol, as perf does, since kallsyms has no sizes.
const kernelPage = 4096

// ParseKallsyms parses a kallsyms file, keeping text symbols (types t, T,
// w, W). It fails with ErrKptrRestrict when every address reads as zero,
// which is what an unprivileged reader sees under kernel.kptr_restrict.
func ParseKallsyms(r io.Reader, opts LoadOptions) (*Kernel, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("kallsyms: %w", err)
	}
	return parseKallsyms(b, opts)
}

// RunningKernel returns the running kernel's symbol table: from the
// cache of this boot's table (kcache.go) or, on a miss, from its kallsyms
// (internal/linux).
func RunningKernel(opts LoadOptions) (*Kernel, error) { return cachedKernel(opts) }

func parseRunningKernel(opts LoadOptions) (*Kernel, error) {
	b, err := linux.Kallsyms()
	if err != nil {
		return nil, fmt.Errorf("kallsyms: %w", err)
	}
	k, err := parseKallsyms(b, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", linux.KallsymsPath, err)
	}
	return k, nil
}

func parseKallsyms(b []byte, opts LoadOptions) (*Kernel, error) {
	all := make([]kallsyms.Symbol, 0, bytes.Count(b, []byte("\n"))+1)
	nonzero, sorted := false, true
	for s, err := range kallsyms.Symbols(b) {
		if err != nil {
			return nil, err
		}
		nonzero = nonzero || s.Addr != 0
		sorted = sorted && (len(all) == 0 || all[len(all)-1].Addr <= s.Addr)
		all = append(all, s)
	}
	if len(all) > 0 && !nonzero {
		return nil, fmt.Errorf("kallsyms: %w: run as root or set sysctl kernel.kptr_restrict=0", ErrKptrRestrict)
	}
	if !sorted {
		// Stable, so aliases keep their order, which picks the alias
		// kept below.
		slices.SortStableFunc(all, func(a, b kallsyms.Symbol) int { return cmp.Compare(a.Addr, b.Addr) })
	}
	return &Kernel{syms: kallsymsTable(all, opts.RawNames)}, nil
}

// kallsymsTable builds the table of the text symbols of all, sorted by
// address, as newTable would from sizeless candidates, without its sort
// and name interning: the names are substrings of one text already.
// kallsyms has no sizes. A text symbol ends where the next symbol of any
// type starts; at the edge of the core kernel or a module, where the next
// symbol may be far away, it ends at the next page (as perf's
// symbols__fixup_end does), so the gap is not charged to it. Of aliases,
// newTable keeps the only one with a size: the last listed.
func kallsymsTable(all []kallsyms.Symbol, raw bool) *table {
	t := &table{raw: raw, names: make([]string, 1, len(all)+1), entries: make([]entry, 0, len(all))}
	mods := map[string]uint32{"": 0}
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].Addr == all[i].Addr {
			j++
		}
		last := -1 // the last text alias at this address
		for k := i; k < j; k++ {
			if all[k].Text() {
				last = k
			}
		}
		if last < 0 {
			i = j
			continue
		}
		s := all[last]
		end := (s.Addr/kernelPage + 1) * kernelPage
		if end == 0 { // the last page of the address space
			end = math.MaxUint64
		}
		if j < len(all) && all[j].Module == s.Module {
			end = all[j].Addr
		}
		// A text symbol of another module may start before the page ends.
		for k := j; k < len(all) && all[k].Addr < end; k++ {
			if all[k].Text() {
				end = all[k].Addr
				break
			}
		}
		if end <= s.Addr { // at the last address: no byte to cover
			i = j
			continue
		}
		mod, ok := mods[s.Module]
		if !ok {
			mod = uint32(len(t.names))
			t.names = append(t.names, s.Module)
			mods[s.Module] = mod
		}
		t.entries = append(t.entries, entry{start: s.Addr, end: end, name: uint32(len(t.names)), mod: mod})
		t.names = append(t.names, s.Name)
		i = j
	}
	return t
}

// Lookup returns the kernel function containing addr.
func (k *Kernel) Lookup(addr uint64) (Symbol, bool) {
	if k.mapped != nil {
		return k.mapped.lookup(addr)
	}
	return k.syms.lookup(addr)
}

// LookupSpan is Lookup, and the span of addresses [lo, hi), addr's
// among them, that Lookup answers with the same symbol: from the
// symbol's start to its end or the next symbol's start, whichever is
// first. A caller that keeps the spans it met answers the addresses of
// a function it has seen without the table (internal/resolve: the
// kernel addresses of a daemon's samples, a new one for nearly every
// sample, each a binary search through the 120,000 entries of a
// kernel's table).
func (k *Kernel) LookupSpan(addr uint64) (sym Symbol, lo, hi uint64, ok bool) {
	if k.mapped != nil {
		return k.mapped.lookupSpan(addr)
	}
	return k.syms.lookupSpan(addr)
}

// NumSymbols is the number of distinct text addresses known.
func (k *Kernel) NumSymbols() int {
	if k.mapped != nil {
		return k.mapped.n
	}
	return len(k.syms.entries)
}
