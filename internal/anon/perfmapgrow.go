package anon

import (
	"bytes"
	"cmp"
	"hash/fnv"
	"slices"

	"github.com/jitprof/jitprof/internal/codemap"
	"github.com/jitprof/jitprof/internal/perfmap"
	"github.com/jitprof/jitprof/internal/unwind"
)

// A perf map is appended to as its JIT compiles: V8 under
// --perf-basic-prof writes a line a minute or so long after its warm-up
// (a function optimized again), and the whole map, hundreds of thousands
// of lines, read and indexed again for each, took a second of CPU a
// push in the daemon. perfmapResolver names code by layers: the map as
// first read, then each run of lines appended since, read alone, as long
// as what they add changes nothing the earlier layers say: no range
// overlapping code already named (an address of two names is ambiguous
// without times), and no name already met (a name at several addresses
// is named with its address). Then each address is named by one layer
// alone, exactly as the whole map read at once names it. Otherwise, or
// once the map was written anew rather than appended to, the map is read
// whole again.
type perfmapResolver struct {
	layers []*mapResolver // disjoint: one names an address, or none
	names  [][]uint64     // each layer's names, hashed (fnv-1a), sorted
	source string
	path   string // the file, as the claim found it
	// end is where the last whole line read ends, and tail the bytes
	// before it (up to tailLen): the same bytes there say the map was
	// appended to since, not written anew.
	end  int64
	tail []byte
}

const (
	// tailLen is how many bytes before end tell an append from a rewrite.
	tailLen = 64
	// maxLayers bounds the layers: past it the map is read whole again,
	// into one.
	maxLayers = 16
	// maxAppend bounds what is read as a layer: more is a map written on
	// at length, read whole again.
	maxAppend = 4 << 20
)

func (r *perfmapResolver) Source() string { return r.source }
func (r *perfmapResolver) Close() error   { return nil }

func (r *perfmapResolver) Resolve(addr, t uint64) (Symbol, bool) {
	for _, l := range r.layers {
		if s, ok := l.Resolve(addr, t); ok {
			return s, true
		}
	}
	return Symbol{}, false
}

// ResolveSeq and UnwindTable are mapResolver's, of the layer that names
// addr: a session's sample files ask a perf map read from its file for
// generation 0, and the whole map's resolver answered them.
func (r *perfmapResolver) ResolveSeq(addr, seq uint64) (Symbol, bool) {
	for _, l := range r.layers {
		if s, ok := l.ResolveSeq(addr, seq); ok {
			return s, true
		}
	}
	return Symbol{}, false
}

func (r *perfmapResolver) UnwindTable(addr, t uint64) (*unwind.Table, uint64, bool) {
	for _, l := range r.layers {
		if tab, base, ok := l.UnwindTable(addr, t); ok {
			return tab, base, true
		}
	}
	return nil, 0, false
}

func nameHash(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// namesOf is the sorted hashes of the names of syms with code.
func namesOf(syms []perfmap.Symbol) []uint64 {
	hs := make([]uint64, 0, len(syms))
	for _, s := range syms {
		if s.Size != 0 {
			hs = append(hs, nameHash(s.Name))
		}
	}
	slices.Sort(hs)
	return slices.Compact(hs)
}

// growable makes the resolver of a perf map read from d a
// perfmapResolver, which reads what is appended to the map alone: it
// finds where the last whole line of the d.size bytes read ends.
func growable(mr *mapResolver, d *data, syms []perfmap.Symbol) Resolver {
	if d.f == nil || d.size == 0 {
		return mr
	}
	look := min(d.size, 4096)
	buf := make([]byte, look)
	if n, err := d.f.ReadAt(buf, d.size-look); int64(n) != look || err != nil {
		return mr
	}
	nl := bytes.LastIndexByte(buf, '\n')
	if nl < 0 {
		return mr
	}
	end := d.size - look + int64(nl) + 1
	tail := buf[max(0, nl+1-tailLen) : nl+1]
	return &perfmapResolver{layers: []*mapResolver{mr}, names: [][]uint64{namesOf(syms)}, source: mr.source,
		path: d.path, end: end, tail: slices.Clone(tail)}
}

// extend returns the resolver of the map as it is now, reading only
// what was appended to it, and the reads that make it, or false when
// the map must be read whole again: p is the process as claimed, reads
// what the claim read, of which every file but the map is unchanged.
func (r *perfmapResolver) extend(p *Process, reads *Reads) (Resolver, *Reads, bool) {
	if len(r.layers) >= maxLayers || len(reads.files) == 0 {
		return nil, nil, false
	}
	last := len(reads.files) - 1
	was := reads.files[last]
	if !was.found || was.path != r.path || !reads.unchangedBut(p, last) {
		return nil, nil, false
	}
	f, err := openTrusted(p, r.path)
	if err != nil {
		return nil, nil, false
	}
	defer f.Close()
	id, err := statID(f.File)
	if err != nil || id.dev != was.id.dev || id.ino != was.id.ino || id.size < r.end || id.size-r.end > maxAppend {
		return nil, nil, false
	}
	buf := make([]byte, int64(len(r.tail))+id.size-r.end)
	if n, err := f.ReadAt(buf, r.end-int64(len(r.tail))); n != len(buf) || err != nil || !bytes.Equal(buf[:len(r.tail)], r.tail) {
		return nil, nil, false
	}
	now := reads.clone()
	now.files[last].id = id
	// Whole lines only. A line the JIT is still writing the whole map's
	// reading takes as it is; its layer could not be the line's end. So
	// is a file written to without growing (touched, or written anew at
	// its size): read whole.
	added := buf[len(r.tail):]
	nl := bytes.LastIndexByte(added, '\n')
	if nl < 0 || nl != len(added)-1 {
		return nil, nil, false
	}
	pm, err := perfmap.Options{Lenient: true}.Parse(bytes.NewReader(added))
	if err != nil || pm.BadLines > 0 {
		return nil, nil, false
	}
	var syms []perfmap.Symbol
	for _, s := range pm.Symbols {
		if s.Size != 0 {
			syms = append(syms, s)
		}
	}
	// Nothing the earlier layers name changes: no name met before, none
	// at two addresses, no range over code named before or over another.
	hs := namesOf(syms)
	for _, h := range hs {
		for _, l := range r.names {
			if _, met := slices.BinarySearch(l, h); met {
				return nil, nil, false
			}
		}
	}
	at := map[string]uint64{}
	for _, s := range syms {
		if start, ok := at[s.Name]; ok && start != s.Start {
			return nil, nil, false
		}
		at[s.Name] = s.Start
		for _, l := range r.layers {
			if l.m.Overlaps(s.Start, s.End()) {
				return nil, nil, false
			}
		}
	}
	byStart := slices.Clone(syms)
	slices.SortFunc(byStart, func(a, b perfmap.Symbol) int { return cmp.Compare(a.Start, b.Start) })
	for i := 1; i < len(byStart); i++ {
		a, b := &byStart[i-1], &byStart[i]
		// The same line twice names as once; else code over code.
		if b.Start < a.End() && (b.Start != a.Start || b.Size != a.Size || b.Name != a.Name) {
			return nil, nil, false
		}
	}
	b := codemap.NewBuilder()
	for _, s := range syms {
		if err := b.Load(0, s.Start, s.Size, s.Name, 0, nil); err != nil {
			return nil, nil, false
		}
	}
	tail := buf[:len(r.tail)+nl+1]
	nr := &perfmapResolver{source: r.source, path: r.path, end: r.end + int64(nl) + 1,
		tail: slices.Clone(tail[max(0, len(tail)-tailLen):])}
	nr.layers = append(slices.Clip(r.layers), &mapResolver{m: b.Build(), source: r.source, timeless: true})
	nr.names = append(slices.Clip(r.names), hs)
	return nr, now, true
}

// Extend returns the Resolver of what a claim's handlers would read now
// when it can read only what was appended to their data since the claim
// that made r (reads what that claim read, p the process as claimed),
// and the reads that make it; false when the data must be read whole
// again. Only a perf map read from a file grows so, its other paths
// unchanged (perfmapResolver).
func Extend(r Resolver, reads *Reads, p *Process) (Resolver, *Reads, bool) {
	pr, ok := r.(*perfmapResolver)
	if !ok || reads == nil || reads.unsure {
		return nil, nil, false
	}
	return pr.extend(p, reads)
}
