package profile

import "math/bits"

// Builder builds a Profile, interning every table so that equal images,
// functions, frames, stacks and threads get one id.
type Builder struct {
	p       Profile
	images  map[imageKey]int32
	funcs   map[funcKey]int32
	frames  map[Frame]int32
	nodes   map[uint64]int32 // parent<<32 | frame: a 64-bit key hashes fastest
	threads map[Thread]int32
	strings map[string]int32
	entries entryTable
	// last is the entry Add found last: consecutive samples of one CPU
	// often share their key, and comparing it is cheaper than hashing it.
	last   Key
	lastID int32
	// With KeepTimes, the times added since the entries' Times were
	// last made are kept in the order added, in runs of one entry each,
	// and put in the entries' Times when they are asked for (Meta,
	// Profile, TakeEntries, Merge): an entry's slice of times looked
	// up, grown and stored again for every AddTimes was a third of
	// adding a place's samples (the daemon's push), and each entry's
	// slice an allocation.
	timed bool
	added []uint64
	runs  []timeRun
	// at is the runs' times of each entry, while they are put in Times.
	at []int32
}

// timeRun is n times of Builder.added, of entry id.
type timeRun struct{ id, n int32 }

type imageKey struct {
	name, buildID string
	kind          ImageKind
}

type funcKey struct {
	image int32
	name  string
	addr  uint64
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	b := &Builder{
		images:  map[imageKey]int32{},
		funcs:   map[funcKey]int32{},
		frames:  map[Frame]int32{},
		nodes:   map[uint64]int32{},
		threads: map[Thread]int32{},
		strings: map[string]int32{},
	}
	b.String("") // so that string id 0, the zero value, means none
	return b
}

// intern returns the id index gives key, or else appends v to the table
// and gives key its index there: one id for equal keys.
func intern[K comparable, V any](index map[K]int32, table *[]V, key K, v V) int32 {
	if id, ok := index[key]; ok {
		return id
	}
	id := int32(len(*table))
	*table = append(*table, v)
	index[key] = id
	return id
}

// Image interns an image by name, build-id and kind; the first one met
// gives the other fields.
func (b *Builder) Image(im Image) int32 {
	return intern(b.images, &b.p.Images, imageKey{im.Name, im.BuildID, im.Kind}, im)
}

// SetNoSymbols records why an image has no symbols.
func (b *Builder) SetNoSymbols(image int32, why string) { b.p.Images[image].NoSymbols = why }

// SetStripped records what would name the functions of a stripped image
// that only its exported symbols do not.
func (b *Builder) SetStripped(image int32, note string) { b.p.Images[image].Stripped = note }

// Func interns a function by image, name and address.
func (b *Builder) Func(f Func) int32 {
	return intern(b.funcs, &b.p.Funcs, funcKey{f.Image, f.Name, f.Addr}, f)
}

// Frame interns a frame.
func (b *Builder) Frame(f Frame) int32 {
	return intern(b.frames, &b.p.Frames, f, f)
}

// Push returns the stack node of frame called from parent (-1: the root).
func (b *Builder) Push(parent, frame int32) int32 {
	return intern(b.nodes, &b.p.Nodes, uint64(uint32(parent))<<32|uint64(uint32(frame)), Node{parent, frame})
}

// String interns a string.
func (b *Builder) String(s string) int32 {
	return intern(b.strings, &b.p.Strings, s, s)
}

// Thread interns a thread.
func (b *Builder) Thread(t Thread) int32 {
	return intern(b.threads, &b.p.Threads, t, t)
}

// Event adds an event and returns its index.
func (b *Builder) Event(e Event) int32 {
	b.p.Events = append(b.p.Events, e)
	return int32(len(b.p.Events) - 1)
}

// Add adds samples to the entry of k.
func (b *Builder) Add(k Key, count, period uint64) {
	ev := &b.p.Events[k.Event]
	ev.Count += count
	ev.Total += period
	id, ok := b.lastID, k == b.last && len(b.p.Entries) > 0
	slot := -1
	if !ok {
		id, slot = b.entries.find(b.p.Entries, k)
		ok = id >= 0
	}
	if ok {
		e := &b.p.Entries[id]
		e.Count += count
		e.Period += period
		b.last, b.lastID = k, id
		return
	}
	b.last, b.lastID = k, int32(len(b.p.Entries))
	b.p.Entries = append(b.p.Entries, Entry{Key: k, Value: Value{count, period}})
	b.entries.add(b.p.Entries, slot)
}

// entryTable finds an entry by its key: open addressing over the
// entries' indices, each slot an index +1 (0: empty), the keys those of
// the entries themselves. A Go map of the keys hashed and compared them
// through the runtime's generic path, 16 bytes each: some 400
// instructions to add an entry, which each place of the daemon's push
// is.
type entryTable struct{ slots []int32 }

// hashKey mixes a key's four fields into a word.
func hashKey(k Key) uint64 {
	h := uint64(uint32(k.Stack)) | uint64(uint32(k.Thread))<<32
	h ^= (uint64(uint32(k.CPU)) | uint64(uint32(k.Event))<<32) * 0x9e3779b97f4a7c15
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>31
}

// find returns the index in es of the entry of k, or -1 and the slot
// for it.
func (t *entryTable) find(es []Entry, k Key) (int32, int) {
	if len(t.slots) == 0 {
		return -1, -1
	}
	mask := uint64(len(t.slots) - 1)
	for i := hashKey(k) & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return -1, int(i)
		}
		if es[s-1].Key == k {
			return s - 1, -1
		}
	}
}

// add puts the last of es in slot (-1: find one), growing the table
// to keep it at most half full.
func (t *entryTable) add(es []Entry, slot int) {
	if 2*len(es) > len(t.slots) {
		t.slots = make([]int32, max(64, 1<<bits.Len(uint(4*len(es)-1))))
		mask := uint64(len(t.slots) - 1)
		for id := range es {
			i := hashKey(es[id].Key) & mask
			for t.slots[i] != 0 {
				i = (i + 1) & mask
			}
			t.slots[i] = int32(id) + 1
		}
		return
	}
	if slot < 0 {
		_, slot = t.find(es[:len(es)-1], es[len(es)-1].Key)
	}
	t.slots[slot] = int32(len(es))
}

// KeepTimes makes the Builder keep the time of every sample added
// with AddAt or AddTimes, in its entry's Times. Call it before the
// first sample.
func (b *Builder) KeepTimes() { b.timed = true }

// AddAt adds count samples taken at time tm to the entry of k, keeping
// the time when KeepTimes was called.
func (b *Builder) AddAt(k Key, count, period, tm uint64) {
	b.Add(k, count, period)
	if b.timed {
		for range count {
			b.added = append(b.added, tm)
		}
		b.run(count)
	}
}

// AddTimes adds the samples taken at times to the entry of k, their
// periods summing to period, keeping their times when KeepTimes was
// called: AddAt of each, with one lookup of the entry.
func (b *Builder) AddTimes(k Key, period uint64, times []uint64) {
	b.Add(k, uint64(len(times)), period)
	if b.timed {
		b.added = append(b.added, times...)
		b.run(uint64(len(times)))
	}
}

// run says the last n times added are of the entry Add found last.
func (b *Builder) run(n uint64) {
	if n == 0 {
		return
	}
	if l := len(b.runs) - 1; l >= 0 && b.runs[l].id == b.lastID {
		b.runs[l].n += int32(n)
		return
	}
	b.runs = append(b.runs, timeRun{b.lastID, int32(n)})
}

// putTimes puts the times added since it last did in the entries'
// Times: each entry's after those it has, in the order added, all in
// one array.
func (b *Builder) putTimes() {
	if len(b.runs) == 0 {
		return
	}
	if cap(b.at) < len(b.p.Entries) {
		b.at = make([]int32, len(b.p.Entries))
	}
	at := b.at[:len(b.p.Entries)]
	clear(at)
	for _, r := range b.runs {
		at[r.id] += r.n
	}
	var n int32
	for id, c := range at {
		at[id] = n
		n += c
	}
	all := make([]uint64, len(b.added))
	from := 0
	for _, r := range b.runs {
		copy(all[at[r.id]:], b.added[from:from+int(r.n)])
		at[r.id] += r.n
		from += int(r.n)
	}
	// at[id] is now where entry id's times end.
	start := int32(0)
	for id, end := range at {
		if end == start {
			continue
		}
		e := &b.p.Entries[id]
		if ts := all[start:end:end]; len(e.Times) == 0 { // an append copies
			e.Times = ts
		} else {
			e.Times = append(e.Times, ts...)
		}
		start = end
	}
	b.at = at
	b.added, b.runs = b.added[:0], b.runs[:0]
}

// TakeEntries hands over the entries added since the Builder began or
// last handed them over, with their times when it keeps them, and goes
// on with none, the events' counts 0: its tables, which the entries'
// keys index, stay and keep growing. A source that cuts a stream of
// samples into intervals (the daemon's push) thus resolves a place once
// whatever interval it falls in, while each interval's profile has its
// own entries, without going through the entries of those before.
func (b *Builder) TakeEntries() []Entry {
	b.putTimes()
	es := b.p.Entries
	b.p.Entries = make([]Entry, 0, len(es))
	clear(b.entries.slots)
	b.last, b.lastID = Key{}, 0
	for i := range b.p.Events {
		b.p.Events[i].Count, b.p.Events[i].Total = 0, 0
	}
	return es
}

// Meta returns the profile's recording fields for the caller to fill,
// and its tables and entries as they are: their Times hold the times
// added up to this call.
func (b *Builder) Meta() *Profile {
	b.putTimes()
	return &b.p
}

// Profile returns the built profile, its entries sorted. The Builder must
// not be used afterwards.
func (b *Builder) Profile() *Profile {
	b.putTimes()
	p := &b.p
	p.SortEntries()
	return p
}

// Merge adds the tables and entries of p, built by another Builder with the
// same events, interning each table in p's order. Merging the profiles of
// consecutive parts of a recording in order thus gives the ids one Builder
// reading the whole recording would have given, and, when b keeps times,
// the times of p's samples after b's.
func (b *Builder) Merge(p *Profile) {
	strs := make([]int32, len(p.Strings))
	for i, s := range p.Strings {
		strs[i] = b.String(s)
	}
	images := make([]int32, len(p.Images))
	for i, im := range p.Images {
		images[i] = b.Image(im)
		if im.NoSymbols != "" {
			b.SetNoSymbols(images[i], im.NoSymbols)
		}
		if im.Stripped != "" {
			b.SetStripped(images[i], im.Stripped)
		}
	}
	funcs := make([]int32, len(p.Funcs))
	for i, f := range p.Funcs {
		f.Image = images[f.Image]
		funcs[i] = b.Func(f)
	}
	frames := make([]int32, len(p.Frames))
	for i, f := range p.Frames {
		f.Func, f.File = funcs[f.Func], strs[f.File]
		frames[i] = b.Frame(f)
	}
	nodes := make([]int32, len(p.Nodes))
	for i, n := range p.Nodes {
		parent := n.Parent
		if parent >= 0 {
			parent = nodes[parent] // a parent is always made before its children
		}
		nodes[i] = b.Push(parent, frames[n.Frame])
	}
	threads := make([]int32, len(p.Threads))
	for i, t := range p.Threads {
		t.Comm = strs[t.Comm]
		threads[i] = b.Thread(t)
	}
	for _, e := range p.Entries {
		k := e.Key
		if k.Stack >= 0 {
			k.Stack = nodes[k.Stack]
		}
		k.Thread = threads[k.Thread]
		if b.timed {
			b.Add(k, e.Count, e.Period)
			b.added = append(b.added, e.Times...)
			b.run(uint64(len(e.Times)))
		} else {
			b.Add(k, e.Count, e.Period)
		}
	}
}

// Retain returns a Builder of p's events, their counts 0, holding
// entries (keyed by p's ids) in their order, with their values, and of
// p's tables only what those entries reach: a live view that drops the
// entries whose counts decayed lets go of what only they reached.
func Retain(p *Profile, entries []Entry) *Builder {
	b := NewBuilder()
	for _, e := range p.Events {
		e.Count, e.Total = 0, 0
		b.Event(e)
	}
	c := retainer{b: b, p: p,
		strs: make([]int32, len(p.Strings)), images: make([]int32, len(p.Images)), funcs: make([]int32, len(p.Funcs)),
		frames: make([]int32, len(p.Frames)), nodes: make([]int32, len(p.Nodes)), threads: make([]int32, len(p.Threads))}
	for _, ids := range [][]int32{c.strs, c.images, c.funcs, c.frames, c.nodes, c.threads} {
		for i := range ids {
			ids[i] = -1
		}
	}
	for _, e := range entries {
		k := e.Key
		k.Stack, k.Thread = c.node(k.Stack), c.thread(k.Thread)
		b.Add(k, e.Count, e.Period)
	}
	return b
}

// retainer interns into b what entries of p reach, each table entry
// once: its ids in b by p's, -1 until met.
type retainer struct {
	b                                           *Builder
	p                                           *Profile
	strs, images, funcs, frames, nodes, threads []int32
}

func (c *retainer) str(i int32) int32 {
	if c.strs[i] < 0 {
		c.strs[i] = c.b.String(c.p.Strings[i])
	}
	return c.strs[i]
}

func (c *retainer) image(i int32) int32 {
	if c.images[i] < 0 {
		im := c.p.Images[i]
		id := c.b.Image(im)
		// Interning keeps the first one's fields; these two are set
		// after.
		c.b.p.Images[id].NoSymbols, c.b.p.Images[id].Stripped = im.NoSymbols, im.Stripped
		c.images[i] = id
	}
	return c.images[i]
}

func (c *retainer) fn(i int32) int32 {
	if c.funcs[i] < 0 {
		f := c.p.Funcs[i]
		f.Image = c.image(f.Image)
		c.funcs[i] = c.b.Func(f)
	}
	return c.funcs[i]
}

func (c *retainer) frame(i int32) int32 {
	if c.frames[i] < 0 {
		f := c.p.Frames[i]
		f.Func, f.File = c.fn(f.Func), c.str(f.File)
		c.frames[i] = c.b.Frame(f)
	}
	return c.frames[i]
}

func (c *retainer) node(i int32) int32 {
	if i < 0 {
		return i
	}
	if c.nodes[i] < 0 {
		n := c.p.Nodes[i]
		c.nodes[i] = c.b.Push(c.node(n.Parent), c.frame(n.Frame))
	}
	return c.nodes[i]
}

func (c *retainer) thread(i int32) int32 {
	if c.threads[i] < 0 {
		t := c.p.Threads[i]
		t.Comm = c.str(t.Comm)
		c.threads[i] = c.b.Thread(t)
	}
	return c.threads[i]
}
