package symbolize

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
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

// ksym is one kallsyms line; name and mod are substrings of the whole
// text, so parsing allocates per table, not per line.
type ksym struct {
	start     uint64
	name, mod string
	text      bool
}

// ParseKallsyms parses "address type name [module]" lines, keeping text
// symbols (types t, T, w, W). It fails with ErrKptrRestrict when every
// address reads as zero, which is what an unprivileged reader sees under
// kernel.kptr_restrict.
func ParseKallsyms(r io.Reader, opts LoadOptions) (*Kernel, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("kallsyms: %w", err)
	}
	text := string(b)
	all := make([]ksym, 0, strings.Count(text, "\n")+1)
	lineNo, nonzero, sorted := 0, false, true
	for rest := text; rest != ""; {
		// The table is 100,000 lines and more: a loop over bytes
		// with a lookup table splits them in a third of the time
		// strings.Lines and a function per byte take.
		line := rest
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			line, rest = rest[:nl+1], rest[nl+1:]
		} else {
			rest = ""
		}
		lineNo++
		var fields [4]string
		n := 0
		for i := 0; n < len(fields); n++ {
			for i < len(line) && spaces[line[i]] {
				i++
			}
			if i == len(line) {
				break
			}
			j := i
			for j < len(line) && !spaces[line[j]] {
				j++
			}
			fields[n], i = line[i:j], j
		}
		if n == 0 {
			continue
		}
		if n < 3 || len(fields[1]) != 1 {
			return nil, fmt.Errorf("kallsyms line %d: want \"address type name [module]\", got %q", lineNo, strings.TrimRight(line, "\r\n"))
		}
		addr, ok := parseHex(fields[0])
		if !ok {
			_, err := strconv.ParseUint(fields[0], 16, 64) // says what is wrong
			return nil, fmt.Errorf("kallsyms line %d: address: %w", lineNo, err)
		}
		nonzero = nonzero || addr != 0
		t := fields[1][0]
		s := ksym{start: addr, name: fields[2], text: t == 'T' || t == 't' || t == 'W' || t == 'w'}
		if n > 3 {
			s.mod = strings.Trim(fields[3], "[]")
		}
		sorted = sorted && (len(all) == 0 || all[len(all)-1].start <= addr)
		all = append(all, s)
	}
	if lineNo > 0 && !nonzero {
		return nil, fmt.Errorf("kallsyms: %w: run as root or set sysctl kernel.kptr_restrict=0", ErrKptrRestrict)
	}
	if !sorted {
		// Stable, so aliases keep their order, which picks the alias
		// kept below.
		slices.SortStableFunc(all, func(a, b ksym) int { return cmp.Compare(a.start, b.start) })
	}
	return &Kernel{syms: kallsymsTable(all, opts.RawNames)}, nil
}

// spaces are the bytes that separate kallsyms fields.
var spaces = [256]bool{' ': true, '\t': true, '\n': true, '\r': true, '\v': true, '\f': true}

// parseHex parses 1 to 16 hex digits, without strconv's generality.
func parseHex(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 16 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(c)
	}
	return v, true
}

// kallsymsTable builds the table of the text symbols of all, sorted by
// address, as newTable would from sizeless candidates, without its sort
// and name interning: the names are substrings of one text already.
// kallsyms has no sizes. A text symbol ends where the next symbol of any
// type starts; at the edge of the core kernel or a module, where the next
// symbol may be far away, it ends at the next page (as perf's
// symbols__fixup_end does), so the gap is not charged to it. Of aliases,
// newTable keeps the only one with a size: the last listed.
func kallsymsTable(all []ksym, raw bool) *table {
	t := &table{raw: raw, names: make([]string, 1, len(all)+1), entries: make([]entry, 0, len(all))}
	mods := map[string]uint32{"": 0}
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].start == all[i].start {
			j++
		}
		last := -1 // the last text alias at this address
		for k := i; k < j; k++ {
			if all[k].text {
				last = k
			}
		}
		if last < 0 {
			i = j
			continue
		}
		s := all[last]
		end := (s.start/kernelPage + 1) * kernelPage
		if j < len(all) && all[j].mod == s.mod {
			end = all[j].start
		}
		// A text symbol of another module may start before the page ends.
		for k := j; k < len(all) && all[k].start < end; k++ {
			if all[k].text {
				end = all[k].start
				break
			}
		}
		mod, ok := mods[s.mod]
		if !ok {
			mod = uint32(len(t.names))
			t.names = append(t.names, s.mod)
			mods[s.mod] = mod
		}
		t.entries = append(t.entries, entry{start: s.start, end: end, name: uint32(len(t.names)), mod: mod})
		t.names = append(t.names, s.name)
		i = j
	}
	t.demangled = make([]atomic.Pointer[string], len(t.names))
	return t
}

// Lookup returns the kernel function containing addr.
func (k *Kernel) Lookup(addr uint64) (Symbol, bool) { return k.syms.lookup(addr) }

// NumSymbols is the number of distinct text addresses known.
func (k *Kernel) NumSymbols() int { return len(k.syms.entries) }
