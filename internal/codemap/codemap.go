package codemap

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Forever is the Unload time of code that was never unloaded or replaced.
const Forever = math.MaxUint64

// DefaultSkew is the default Map.Skew: 10µs, well above the clock reading
// gap between a JIT and the kernel, well below the time a JIT needs to
// regenerate code at the same address.
const DefaultSkew = 10_000

// Errors the Builder returns.
var (
	// ErrBadRange is an empty code range, one that wraps around the
	// address space, or one larger than MaxCodeSize.
	ErrBadRange = errors.New("bad address range")
	// ErrTooMany means MaxEvents events were already added.
	ErrTooMany = errors.New("too many events")
)

// MaxEvents bounds the events of one Builder; the index uses int32.
const MaxEvents = 1 << 29

// MaxCodeSize bounds one piece of code: 2 GiB. No JIT reserves more for
// all of its code together (HotSpot's code cache is at most 2 GiB,
// CODE_CACHE_SIZE_LIMIT; V8's code range at most 512 MiB), and x86-64 JITs
// keep their code within the +-2 GiB a rel32 call reaches. A larger range
// comes from a corrupt or hostile file, and would name every sample of the
// process after one entry.
const MaxCodeSize = 2 << 30

// Entry is one piece of code over the time it was live.
type Entry struct {
	Start, End uint64 // address range [Start, End)
	Name       string
	Gen        uint64 // generation: jitdump code_index, or a logger's sequence number
	Load       uint64 // time the code appeared
	Unload     uint64 // time it stopped being there, or Forever
	Payload    any    // the source's own data, such as line tables
}

// Live reports whether the entry was live at time t.
func (e *Entry) Live(t uint64) bool { return e.Load <= t && t < e.Unload }

type kind uint8

const (
	evLoad kind = iota
	evMove
	evUnload
)

type event struct {
	t       uint64
	kind    kind
	start   uint64 // the range the event touches: the load, the move's destination, the unload
	end     uint64
	oldAddr uint64 // for moves
	gen     uint64
	name    string
	payload any
}

// Builder collects events. The zero value is not usable; call NewBuilder.
type Builder struct {
	events []event
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder { return &Builder{} }

func (b *Builder) check(start, size uint64) (uint64, error) {
	if len(b.events) >= MaxEvents {
		return 0, fmt.Errorf("codemap: %w (limit %d)", ErrTooMany, MaxEvents)
	}
	return CheckRange(start, size)
}

// CheckRange returns the end of [start, start+size), or the error a
// Builder gives such a range: for indexes of code built otherwise.
func CheckRange(start, size uint64) (uint64, error) {
	if size == 0 || start+size < start {
		return 0, fmt.Errorf("codemap: %w: %#x+%#x", ErrBadRange, start, size)
	}
	if size > MaxCodeSize {
		return 0, fmt.Errorf("codemap: %w: %#x+%#x is larger than any code can be (%d GiB)", ErrBadRange, start, size, MaxCodeSize>>30)
	}
	return start + size, nil
}

// add appends e, the events doubled when full: append grows a large
// slice a quarter at a time, allocating five times what it keeps, and a
// JIT's data can be hundreds of thousands of loads.
func (b *Builder) add(e event) {
	if len(b.events) == cap(b.events) {
		b.events = slices.Grow(b.events, max(len(b.events), 64))
	}
	b.events = append(b.events, e)
}

// Load records that code name of generation gen appeared at
// [start, start+size) at time t.
func (b *Builder) Load(t, start, size uint64, name string, gen uint64, payload any) error {
	end, err := b.check(start, size)
	if err != nil {
		return err
	}
	b.add(event{t: t, kind: evLoad, start: start, end: end, gen: gen, name: name, payload: payload})
	return nil
}

// Move records that the code of generation gen at oldStart moved to
// newStart at time t, keeping its name and payload.
func (b *Builder) Move(t, gen, oldStart, newStart, size uint64) error {
	end, err := b.check(newStart, size)
	if err != nil {
		return err
	}
	b.add(event{t: t, kind: evMove, start: newStart, end: end, oldAddr: oldStart, gen: gen})
	return nil
}

// Unload records that all code overlapping [start, start+size) went away
// at time t.
func (b *Builder) Unload(t, start, size uint64) error {
	end, err := b.check(start, size)
	if err != nil {
		return err
	}
	b.add(event{t: t, kind: evUnload, start: start, end: end})
	return nil
}

type item struct {
	load, unload uint64
	entry        int32
}

// Map answers lookups. It is immutable and safe for concurrent use, except
// that Skew must be set before lookups start.
type Map struct {
	// Skew is the clock-skew tolerance in nanoseconds (see the package
	// documentation).
	Skew uint64

	// UnmatchedMoves counts moves of a generation that had no code at the
	// old address. Their destination range still ends what was there.
	UnmatchedMoves int

	entries []Entry  // in the order of their appearance: (Load, call order)
	coords  []uint64 // sorted distinct range boundaries; leaf i is [coords[i], coords[i+1])
	size    int      // leaves in the tree, a power of two
	// Every entry is stored at the O(log n) tree nodes that exactly cover
	// its range; node k holds idx[off[k]:off[k+1]], sorted by load time
	// (with their lifetimes beside them so that the search reads one array).
	// Entries at one node overlap in address, so their lifetimes do not
	// overlap, and a binary search on load time finds the one live at t.
	off   []int32
	items []item
	byGen []int32 // entry indices sorted by (Gen, Start, index)
}

// Build sorts the events and builds the Map. The Builder may be reused.
func (b *Builder) Build() *Map {
	ev := b.events
	if !slices.IsSortedFunc(ev, cmpTime) {
		ev = slices.Clone(ev)
		slices.SortStableFunc(ev, cmpTime)
	}
	m := &Map{Skew: DefaultSkew}

	coords := make([]uint64, 0, 2*len(ev))
	for i := range ev {
		coords = append(coords, ev[i].start, ev[i].end)
	}
	slices.Sort(coords)
	m.coords = slices.Compact(coords)
	m.size = 1
	for m.size < len(m.coords) {
		m.size <<= 1
	}

	// Forward: create entries and find which entry each move ends. Each
	// load and move makes one: sized so, since append's growth of a large
	// slice, a quarter at a time, allocates five times what it keeps.
	n := 0
	for i := range ev {
		if ev[i].kind != evUnload {
			n++
		}
	}
	m.entries = make([]Entry, 0, n)
	entryOf := make([]int32, len(ev)) // event -> entry it creates, or -1
	movedBy := make([]int32, 0, n)    // entry -> event that moved it away, or -1
	current := map[uint64]int32{}     // gen -> latest entry of that generation
	for i := range ev {
		e := &ev[i]
		entryOf[i] = -1
		switch e.kind {
		case evLoad:
			entryOf[i] = int32(len(m.entries))
			current[e.gen] = entryOf[i]
			m.entries = append(m.entries, Entry{Start: e.start, End: e.end, Name: e.name, Gen: e.gen, Load: e.t, Payload: e.payload})
			movedBy = append(movedBy, -1)
		case evMove:
			from, ok := current[e.gen]
			if !ok || m.entries[from].Start != e.oldAddr {
				m.UnmatchedMoves++
				continue
			}
			movedBy[from] = int32(i)
			src := m.entries[from]
			entryOf[i] = int32(len(m.entries))
			current[e.gen] = entryOf[i]
			m.entries = append(m.entries, Entry{Start: e.start, End: e.end, Name: src.Name, Gen: e.gen, Load: e.t, Payload: src.Payload})
			movedBy = append(movedBy, -1)
		}
	}

	// Backward: an entry ends at the earliest later event touching its
	// range. Walking events from last to first, each event paints its
	// range with its index, which is smaller than every paint before it,
	// so "earliest later event over a range" is a range minimum.
	paint := newMinTree(m.size)
	for i := len(ev) - 1; i >= 0; i-- {
		e := &ev[i]
		lo, hi := m.leaves(e.start, e.end)
		if n := entryOf[i]; n >= 0 {
			endBy := paint.min(lo, hi)
			if mv := movedBy[n]; mv >= 0 && mv < endBy {
				endBy = mv
			}
			m.entries[n].Unload = Forever
			if endBy < int32(len(ev)) {
				m.entries[n].Unload = ev[endBy].t
			}
		}
		paint.chmin(lo, hi, int32(i))
	}

	m.index()
	return m
}

func cmpTime(a, b event) int { return cmp.Compare(a.t, b.t) }

// leaves returns the leaf range [lo, hi) that covers [start, end).
func (m *Map) leaves(start, end uint64) (lo, hi int) {
	lo, _ = slices.BinarySearch(m.coords, start)
	hi, _ = slices.BinarySearch(m.coords, end)
	return lo, hi
}

// cover calls f for each tree node in the canonical cover of leaves [lo, hi).
func (m *Map) cover(lo, hi int, f func(node int)) {
	for l, r := lo+m.size, hi+m.size; l < r; l, r = l>>1, r>>1 {
		if l&1 == 1 {
			f(l)
			l++
		}
		if r&1 == 1 {
			r--
			f(r)
		}
	}
}

func (m *Map) index() {
	m.off = make([]int32, 2*m.size+1)
	for i := range m.entries {
		lo, hi := m.leaves(m.entries[i].Start, m.entries[i].End)
		m.cover(lo, hi, func(n int) { m.off[n+1]++ })
	}
	for n := 1; n < len(m.off); n++ {
		m.off[n] += m.off[n-1]
	}
	total := m.off[len(m.off)-1]
	m.items = make([]item, total)
	fill := slices.Clone(m.off[:len(m.off)-1])
	// Entries are in load order, so every node's list comes out sorted.
	for i := range m.entries {
		e := &m.entries[i]
		lo, hi := m.leaves(e.Start, e.End)
		m.cover(lo, hi, func(n int) {
			m.items[fill[n]] = item{load: e.Load, unload: e.Unload, entry: int32(i)}
			fill[n]++
		})
	}

	m.byGen = make([]int32, len(m.entries))
	for i := range m.byGen {
		m.byGen[i] = int32(i)
	}
	slices.SortFunc(m.byGen, func(a, b int32) int {
		ea, eb := &m.entries[a], &m.entries[b]
		return cmp.Or(cmp.Compare(ea.Gen, eb.Gen), cmp.Compare(ea.Start, eb.Start), cmp.Compare(a, b))
	})
}

// leaf returns the leaf holding addr, or -1.
func (m *Map) leaf(addr uint64) int {
	i, found := slices.BinarySearch(m.coords, addr)
	if !found {
		i--
	}
	if i < 0 || i >= len(m.coords)-1 {
		return -1
	}
	return i
}

// Lookup returns the code live at addr at time t, or code loaded there
// within Skew after t if nothing was live.
func (m *Map) Lookup(addr, t uint64) (*Entry, bool) {
	l := m.leaf(addr)
	if l < 0 {
		return nil, false
	}
	var early *Entry
	for n := l + m.size; n >= 1; n >>= 1 {
		lo, hi := int(m.off[n]), int(m.off[n+1])
		if lo == hi {
			continue
		}
		items := m.items[lo:hi]
		// i is the first item loaded after t; the one before it is the
		// only one that can be live at t.
		i, j := 0, len(items)
		for i < j {
			h := int(uint(i+j) >> 1)
			if items[h].load <= t {
				i = h + 1
			} else {
				j = h
			}
		}
		if i > 0 && t < items[i-1].unload {
			return &m.entries[items[i-1].entry], true
		}
		if i < len(items) && items[i].load-t <= m.Skew && (early == nil || items[i].load < early.Load) {
			early = &m.entries[items[i].entry]
		}
	}
	return early, early != nil
}

// LookupSeq returns the code of generation gen that covered addr; if the
// generation moved over addr more than once, the latest. It costs
// O(log n + k) for k entries of that generation.
func (m *Map) LookupSeq(addr, gen uint64) (*Entry, bool) {
	// First entry past (gen, addr); candidates are before it.
	i := sort.Search(len(m.byGen), func(j int) bool {
		e := &m.entries[m.byGen[j]]
		return e.Gen > gen || e.Gen == gen && e.Start > addr
	})
	var best *Entry
	for i--; i >= 0; i-- {
		e := &m.entries[m.byGen[i]]
		if e.Gen != gen {
			break
		}
		if addr < e.End && (best == nil || e.Load >= best.Load) {
			best = e
		}
	}
	return best, best != nil
}

// Ambiguous returns every entry that ever covered addr, the first of each
// distinct name in load order, and the range [start, end) around addr over
// which that list is the same, or nil if no code ever covered addr. More
// than one entry means the address is ambiguous without times.
func (m *Map) Ambiguous(addr uint64) (entries []*Entry, start, end uint64) {
	l := m.leaf(addr)
	if l < 0 {
		return nil, 0, 0
	}
	var all []int32
	for n := l + m.size; n >= 1; n >>= 1 {
		for _, it := range m.items[m.off[n]:m.off[n+1]] {
			all = append(all, it.entry)
		}
	}
	slices.Sort(all)
	seen := map[string]bool{}
	for _, i := range all {
		e := &m.entries[i]
		if !seen[e.Name] {
			seen[e.Name] = true
			entries = append(entries, e)
		}
	}
	if len(entries) == 0 {
		return nil, 0, 0
	}
	return entries, m.coords[l], m.coords[l+1]
}

// Overlaps reports whether code ever covered an address of [start, end):
// an entry covers start, or one begins or ends inside the range (every
// entry's bounds are coordinates of the index).
func (m *Map) Overlaps(start, end uint64) bool {
	if l := m.leaf(start); l >= 0 {
		for n := l + m.size; n >= 1; n >>= 1 {
			if m.off[n+1] > m.off[n] {
				return true
			}
		}
	}
	i, _ := slices.BinarySearch(m.coords, start+1)
	return i < len(m.coords) && m.coords[i] < end
}

// Entries returns all entries in load order. The caller must not modify
// them.
func (m *Map) Entries() []Entry { return m.entries }

// minTree supports "lower every value in a range to at most v" and "minimum
// over a range" on leaves [0, size), all starting at MaxInt32.
type minTree struct {
	size int
	mn   []int32 // minimum over the subtree
	tag  []int32 // bound applied to the whole subtree
}

func newMinTree(size int) *minTree {
	t := &minTree{size: size, mn: make([]int32, 2*size), tag: make([]int32, 2*size)}
	for i := range t.mn {
		t.mn[i], t.tag[i] = math.MaxInt32, math.MaxInt32
	}
	return t
}

func (t *minTree) chmin(lo, hi int, v int32) { t.update(1, 0, t.size, lo, hi, v) }

func (t *minTree) update(n, nl, nr, lo, hi int, v int32) {
	if hi <= nl || nr <= lo {
		return
	}
	t.mn[n] = min(t.mn[n], v)
	if lo <= nl && nr <= hi {
		t.tag[n] = min(t.tag[n], v)
		return
	}
	mid := (nl + nr) / 2
	t.update(2*n, nl, mid, lo, hi, v)
	t.update(2*n+1, mid, nr, lo, hi, v)
}

func (t *minTree) min(lo, hi int) int32 { return t.query(1, 0, t.size, lo, hi) }

func (t *minTree) query(n, nl, nr, lo, hi int) int32 {
	if hi <= nl || nr <= lo {
		return math.MaxInt32
	}
	if lo <= nl && nr <= hi {
		return t.mn[n]
	}
	mid := (nl + nr) / 2
	return min(t.tag[n], t.query(2*n, nl, mid, lo, hi), t.query(2*n+1, mid, nr, lo, hi))
}
