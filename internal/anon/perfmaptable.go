package anon

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/jitprof/jitprof/internal/codemap"
	"github.com/jitprof/jitprof/internal/perfmap"
)

// codeIndex is what a mapResolver asks of the code it names: a
// codemap.Map, or a perf map's perfmapTable.
type codeIndex interface {
	Lookup(addr, t uint64) (*codemap.Entry, bool)
	LookupSeq(addr, gen uint64) (*codemap.Entry, bool)
	Ambiguous(addr uint64) (entries []*codemap.Entry, start, end uint64)
	Overlaps(start, end uint64) bool
}

// perfmapTable indexes a perf map's ranges as a codemap.Map of them
// would, in a fifth of the memory: a JIT's map past its warm-up has
// hundreds of thousands of lines, nearly all of code no other line
// overlaps, and a daemon keeps the index of each such process. Those
// ranges are kept sorted, 20 bytes each with their names' index; the
// few that overlap another (an address the JIT used again) in a
// codemap.Map of their own, which answers for every address they cover,
// as no other range covers it. A name the map gives several addresses
// (addrNamed) gets its address when a range is asked for, not for each
// range as it is indexed: a JIT's warm-up can give hundreds of thousands
// of functions one name.
type perfmapTable struct {
	starts, ends []uint64 // the ranges no other overlaps, by start
	names        []uint32 // their names, in text
	text         []string // each name once
	addrNamed    []bool   // of each name in text: named with its address
	over         *codemap.Map
}

// withAddr is name as a range at start is named when the map gives the
// name several addresses.
func withAddr(name string, start uint64) string { return fmt.Sprintf("%s [%#x]", name, start) }

// newPerfmapTable indexes syms (a perf map's lines, in the map's order,
// none of size 0), the names in several named with their addresses; an
// error is the range's codemap.Builder would give, with its line.
func newPerfmapTable(syms []perfmap.Symbol, several map[string]bool) (*perfmapTable, int, error) {
	if len(syms) > codemap.MaxEvents {
		return nil, syms[codemap.MaxEvents].Line, fmt.Errorf("codemap: %w (limit %d)", codemap.ErrTooMany, codemap.MaxEvents)
	}
	for i := range syms {
		if _, err := codemap.CheckRange(syms[i].Start, syms[i].Size); err != nil {
			return nil, syms[i].Line, err
		}
	}
	order := make([]int32, len(syms))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		return cmp.Or(cmp.Compare(syms[a].Start, syms[b].Start), cmp.Compare(a, b))
	})
	// A range overlaps an earlier one (by start) when it starts before
	// the end of any, and a later one when it ends past the start of the
	// next.
	overlaps := make([]bool, len(order))
	maxEnd := uint64(0)
	for k, i := range order {
		s := &syms[i]
		if k > 0 && s.Start < maxEnd {
			overlaps[k] = true
		}
		if k+1 < len(order) && s.End() > syms[order[k+1]].Start {
			overlaps[k] = true
		}
		maxEnd = max(maxEnd, s.End())
	}
	t := &perfmapTable{}
	n := len(order) - count(overlaps)
	t.starts, t.ends, t.names = make([]uint64, 0, n), make([]uint64, 0, n), make([]uint32, 0, n)
	index := map[string]uint32{}
	var over []int32
	for k, i := range order {
		if overlaps[k] {
			over = append(over, i)
			continue
		}
		s := &syms[i]
		x, ok := index[s.Name]
		if !ok {
			x = uint32(len(t.text))
			index[s.Name] = x
			t.text = append(t.text, s.Name)
			t.addrNamed = append(t.addrNamed, several[s.Name])
		}
		t.starts, t.ends, t.names = append(t.starts, s.Start), append(t.ends, s.End()), append(t.names, x)
	}
	t.text, t.addrNamed = slices.Clip(t.text), slices.Clip(t.addrNamed)
	if len(over) > 0 {
		// In the map's order, named as a codemap.Map of all the
		// ranges names them: it answers in that order, and tells
		// names apart (Ambiguous) by their names with addresses.
		slices.Sort(over)
		b := codemap.NewBuilder()
		for _, i := range over {
			name := syms[i].Name
			if several[name] {
				name = withAddr(name, syms[i].Start)
			}
			if err := b.Load(0, syms[i].Start, syms[i].Size, name, 0, nil); err != nil {
				return nil, syms[i].Line, err
			}
		}
		t.over = b.Build()
	}
	return t, 0, nil
}

func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// at returns the range no other overlaps that covers addr, or -1.
func (t *perfmapTable) at(addr uint64) int {
	i, found := slices.BinarySearch(t.starts, addr)
	if !found {
		i--
	}
	if i < 0 || addr >= t.ends[i] {
		return -1
	}
	return i
}

// entry is range i as a codemap.Map of the whole map has it.
func (t *perfmapTable) entry(i int) *codemap.Entry {
	name := t.text[t.names[i]]
	if t.addrNamed[t.names[i]] {
		name = withAddr(name, t.starts[i])
	}
	return &codemap.Entry{Start: t.starts[i], End: t.ends[i], Name: name, Unload: codemap.Forever}
}

func (t *perfmapTable) Lookup(addr, tm uint64) (*codemap.Entry, bool) {
	if i := t.at(addr); i >= 0 {
		return t.entry(i), true
	}
	if t.over != nil {
		return t.over.Lookup(addr, tm)
	}
	return nil, false
}

func (t *perfmapTable) LookupSeq(addr, gen uint64) (*codemap.Entry, bool) {
	if i := t.at(addr); i >= 0 {
		if gen != 0 {
			return nil, false // a perf map's code has none
		}
		return t.entry(i), true
	}
	if t.over != nil {
		return t.over.LookupSeq(addr, gen)
	}
	return nil, false
}

func (t *perfmapTable) Ambiguous(addr uint64) ([]*codemap.Entry, uint64, uint64) {
	if i := t.at(addr); i >= 0 {
		return []*codemap.Entry{t.entry(i)}, t.starts[i], t.ends[i]
	}
	if t.over != nil {
		return t.over.Ambiguous(addr)
	}
	return nil, 0, 0
}

// Overlaps is codemap.Map's: a range covers start, or one begins or
// ends inside [start, end).
func (t *perfmapTable) Overlaps(start, end uint64) bool {
	if t.at(start) >= 0 {
		return true
	}
	// The first range beginning past start; the one before it ends at
	// or before start, as it does not cover it.
	i, _ := slices.BinarySearch(t.starts, start+1)
	if i < len(t.starts) && t.starts[i] < end {
		return true
	}
	return t.over != nil && t.over.Overlaps(start, end)
}
