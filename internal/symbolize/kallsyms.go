package symbolize

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"debug/elf"
)

// Kernel is the kernel's symbol table from kallsyms, modules included.
type Kernel struct {
	syms *table
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

// ParseKallsyms parses "address type name [module]" lines, keeping text
// symbols (types t, T, w, W). It fails with ErrKptrRestrict when every
// address reads as zero, which is what an unprivileged reader sees under
// kernel.kptr_restrict.
func ParseKallsyms(r io.Reader, opts LoadOptions) (*Kernel, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var all []kallsym
	lineNo, nonzero := 0, false
	for sc.Scan() {
		lineNo++
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 3 || len(fields[1]) != 1 {
			return nil, fmt.Errorf("kallsyms line %d: want \"address type name [module]\", got %q", lineNo, sc.Text())
		}
		addr, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("kallsyms line %d: address: %w", lineNo, err)
		}
		nonzero = nonzero || addr != 0
		s := kallsym{candidate: candidate{name: fields[2], start: addr}, text: true}
		switch fields[1] {
		case "T":
			s.bind = elf.STB_GLOBAL
		case "t":
			s.bind = elf.STB_LOCAL
		case "W", "w":
			s.bind = elf.STB_WEAK
		default:
			s.text = false
		}
		if len(fields) > 3 {
			s.mod = strings.Trim(fields[3], "[]")
		}
		all = append(all, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("kallsyms: %w", err)
	}
	if lineNo > 0 && !nonzero {
		return nil, fmt.Errorf("kallsyms: %w: run as root or set sysctl kernel.kptr_restrict=0", ErrKptrRestrict)
	}
	// kallsyms has no sizes. A text symbol ends where the next symbol of any
	// type starts; at the edge of the core kernel or a module, where the
	// next symbol may be far away, it ends at the next page (as perf's
	// symbols__fixup_end does), so the gap is not charged to it.
	slices.SortStableFunc(all, func(a, b kallsym) int { return cmp.Compare(a.start, b.start) })
	var cands []candidate
	for i, s := range all {
		if !s.text {
			continue
		}
		j := i + 1
		for j < len(all) && all[j].start == s.start {
			j++
		}
		if j < len(all) && all[j].mod == s.mod {
			s.limit = all[j].start
		} else {
			s.limit = (s.start/kernelPage + 1) * kernelPage
		}
		cands = append(cands, s.candidate)
	}
	return &Kernel{syms: newTable(cands, opts.RawNames)}, nil
}

type kallsym struct {
	candidate
	text bool
}

// Lookup returns the kernel function containing addr.
func (k *Kernel) Lookup(addr uint64) (Symbol, bool) { return k.syms.lookup(addr) }

// NumSymbols is the number of distinct text addresses known.
func (k *Kernel) NumSymbols() int { return len(k.syms.entries) }
