package symbolize

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// mappedOf encodes t as a cache and reads it back.
func mappedOf(t testing.TB, tab *table) *mappedTable {
	m, err := kcacheRead(kcacheEncode(tab))
	if err != nil {
		t.Fatal(err)
	}
	m.raw = tab.raw
	return m
}

// TestKcacheRoundTrip: a table read back from its cache answers every
// lookup as the parsed table does: at, inside, between and after symbols.
func TestKcacheRoundTrip(t *testing.T) {
	k, err := LoadKallsyms("testdata/kallsyms.txt", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := mappedOf(t, k.syms)
	if m.n != len(k.syms.entries) {
		t.Fatalf("%d entries read back, want %d", m.n, len(k.syms.entries))
	}
	var addrs []uint64
	for _, e := range k.syms.entries {
		addrs = append(addrs, e.start-1, e.start, e.start+1, e.end-1, e.end)
	}
	for _, a := range addrs {
		want, wok := k.syms.lookup(a)
		got, gok := m.lookup(a)
		if want != got || wok != gok {
			t.Errorf("lookup(%#x) = %+v, %v from the cache; %+v, %v parsed", a, got, gok, want, wok)
		}
	}
}

// TestKcacheOverlapsAndEmpty: an ELF table can hold a function whose size
// covers the next function's start, and a sizeless symbol at the end of
// its section, which ends where it starts. Its cache is read back, not
// refused (which made every report read such an image's symbols anew and
// write its cache again), and answers every lookup as the table does.
func TestKcacheOverlapsAndEmpty(t *testing.T) {
	tab := newTable([]candidate{
		{name: "outer", start: 0x100, size: 0x100, bind: elf.STB_GLOBAL},
		{name: "inner", start: 0x150, size: 0x10, bind: elf.STB_GLOBAL},
		{name: "label", start: 0x300, limit: 0x300, bind: elf.STB_LOCAL},
	}, true)
	if e := tab.entries; len(e) != 3 || e[0].end <= e[1].start || e[2].end != e[2].start {
		t.Fatalf("entries %+v: want an overlap and an empty entry to test", e)
	}
	m := mappedOf(t, tab)
	for _, e := range tab.entries {
		for _, a := range []uint64{e.start - 1, e.start, e.start + 1, e.end - 1, e.end, e.end + 1} {
			want, wok := tab.lookup(a)
			got, gok := m.lookup(a)
			if want != got || wok != gok {
				t.Errorf("lookup(%#x) = %+v, %v from the cache; %+v, %v built", a, got, gok, want, wok)
			}
		}
	}
}

// TestKcacheRefusesMalformed: cut or altered caches are refused, never
// looked up; a cache whose entries a lookup finds damaged names nothing
// there, and names the others as before.
func TestKcacheRefusesMalformed(t *testing.T) {
	k, err := LoadKallsyms("testdata/kallsyms.txt", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good := kcacheEncode(k.syms)
	for name, b := range map[string][]byte{
		"empty":  nil,
		"magic":  append([]byte("jitprof kallsyms cache 0\n"), good[len(kcacheMagic):]...),
		"cut":    good[:len(good)-1],
		"longer": append(bytes.Clone(good), 0),
	} {
		if _, err := kcacheRead(b); !errors.Is(err, errKcache) {
			t.Errorf("%s: err = %v, want errKcache", name, err)
		}
	}

	hdr := len(kcacheMagic) + 12
	es := k.syms.entries
	damaged := func(what string, at int, b []byte) {
		t.Helper()
		m, err := kcacheRead(b)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		m.raw = k.syms.raw
		if s, ok := m.lookup(es[at].start); ok {
			t.Errorf("%s: lookup(%#x) = %+v, want nothing", what, es[at].start, s)
		}
		for i, e := range es {
			if i == at {
				continue
			}
			want, _ := k.syms.lookup(e.start)
			if got, ok := m.lookup(e.start); !ok || got != want {
				t.Errorf("%s: lookup(%#x) = %+v, %v; want %+v", what, e.start, got, ok, want)
			}
		}
	}
	badName := bytes.Clone(good) // entry 0 names a name past the last
	copy(badName[hdr+16:hdr+20], []byte{0xff, 0xff, 0xff, 0x7f})
	damaged("name past the last", 0, badName)
	backwards := bytes.Clone(good) // entry 1 ends before it starts
	binary.LittleEndian.PutUint64(backwards[hdr+24+8:], es[1].start-1)
	damaged("end before start", 1, backwards)
	badOffset := bytes.Clone(good) // entry 2's name ends past the text
	offs := hdr + 24*len(es)
	binary.LittleEndian.PutUint32(badOffset[offs+4*int(es[2].name):], 0xffffff)
	m, err := kcacheRead(badOffset)
	if err != nil {
		t.Fatal(err)
	}
	m.raw = k.syms.raw
	if s, ok := m.lookup(es[2].start); !ok || s.Name != "" {
		t.Errorf("a name past the text: lookup(%#x) = %+v, %v; want the symbol without a name", es[2].start, s, ok)
	}
}

// TestKcacheFileChecks: a cache that others may write, or a link to one,
// is not used.
func TestKcacheFileChecks(t *testing.T) {
	k, err := LoadKallsyms("testdata/kallsyms.txt", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "kallsyms-x")
	if err := kcacheStore(dir, path, k.syms); err != nil {
		t.Fatal(err)
	}
	if _, err := kcacheLoad(path); err != nil {
		t.Fatalf("own cache refused: %v", err)
	}
	if err := os.Symlink(path, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := kcacheLoad(filepath.Join(dir, "link")); err == nil {
		t.Error("a symlink to a cache was followed")
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := kcacheLoad(path); err == nil {
		t.Error("a cache writable by others was used")
	}
}

// TestRunningKernelCached: the second load of the running kernel's table
// comes from the cache the first wrote, and names kernel addresses as
// /proc/kallsyms does.
func TestRunningKernelCached(t *testing.T) {
	parsed, err := parseRunningKernel(LoadOptions{})
	if errors.Is(err, ErrKptrRestrict) && os.Geteuid() != 0 {
		t.Skipf("kernel addresses are hidden from this user: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kcacheKey(); err != nil {
		if os.Geteuid() != 0 {
			t.Skipf("no cache key for this user: %v", err)
		}
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Setenv("JITPROF_CACHE_DIR", dir)
	first, err := RunningKernel(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if first.mapped != nil {
		t.Fatal("first load came from a cache")
	}
	second, err := RunningKernel(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if second.mapped == nil {
		t.Fatal("second load did not come from the cache")
	}
	if second.NumSymbols() != parsed.NumSymbols() {
		t.Errorf("%d symbols from the cache, %d parsed", second.NumSymbols(), parsed.NumSymbols())
	}
	es := parsed.syms.entries
	for i := 0; i < len(es); i += 97 {
		for _, a := range []uint64{es[i].start, es[i].end - 1} {
			want, _ := parsed.Lookup(a)
			if got, _ := second.Lookup(a); got != want {
				t.Fatalf("Lookup(%#x) = %+v from the cache, %+v parsed", a, got, want)
			}
		}
	}
	t.Setenv("JITPROF_CACHE_DIR", "off")
	if k, err := RunningKernel(LoadOptions{}); err != nil || k.mapped != nil {
		t.Errorf("JITPROF_CACHE_DIR=off: cached %v, err %v", k != nil && k.mapped != nil, err)
	}
}

// FuzzKcache: any bytes are refused or give a table whose lookups stay
// in its bytes, find only symbols that hold the address, and, where the
// entries are in order and whole, answer every lookup around them as the
// table of the same entries and names does.
func FuzzKcache(f *testing.F) {
	k, err := ParseKallsyms(bytes.NewReader([]byte("2 T b\n1 T a\n1 W a2\n3 D d\nffffffffc0000000 t m [mod]\n")), LoadOptions{RawNames: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(kcacheEncode(k.syms))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := kcacheRead(b)
		if err != nil {
			return
		}
		m.raw = true
		tab := &table{raw: true}
		for i := range m.nnames {
			tab.names = append(tab.names, m.rawName(uint32(i)))
		}
		le := binary.LittleEndian
		whole := true
		for i := range m.n {
			e := m.ents[24*i:]
			en := entry{start: le.Uint64(e), end: le.Uint64(e[8:]), name: le.Uint32(e[16:]), mod: le.Uint32(e[20:])}
			whole = whole && en.end >= en.start && int(en.name) < m.nnames && int(en.mod) < m.nnames &&
				(i == 0 || en.start > tab.entries[i-1].start)
			tab.entries = append(tab.entries, en)
		}
		for i := range m.nnames {
			from := uint32(0)
			if i > 0 {
				from = le.Uint32(m.offs[4*(i-1):])
			}
			whole = whole && from <= le.Uint32(m.offs[4*i:]) && int(le.Uint32(m.offs[4*i:])) <= len(m.text)
		}
		for _, e := range tab.entries {
			for _, a := range []uint64{e.start - 1, e.start, e.end - 1, e.end} {
				got, gok := m.lookup(a)
				if gok && (a < got.Start || a-got.Start >= got.Size) {
					t.Fatalf("lookup(%#x) = %+v, which does not hold it", a, got)
				}
				if !whole {
					continue
				}
				checkSpan(t, "mapped", m.lookup, m.lookupSpan, a)
				if want, wok := tab.lookup(a); got != want || gok != wok {
					t.Fatalf("lookup(%#x) = %+v, %v mapped; %+v, %v from the entries", a, got, gok, want, wok)
				}
			}
		}
	})
}

// checkSpan checks lookupSpan(a) against lookup: the same answer, a
// span that holds a, and lookup's answer the same at its first and last
// address and at one between.
func checkSpan(t *testing.T, what string, lookup func(uint64) (Symbol, bool), lookupSpan func(uint64) (Symbol, uint64, uint64, bool), a uint64) {
	t.Helper()
	want, wok := lookup(a)
	got, lo, hi, gok := lookupSpan(a)
	if got != want || gok != wok {
		t.Fatalf("%s: lookupSpan(%#x) = %+v, %v; lookup %+v, %v", what, a, got, gok, want, wok)
	}
	if !gok {
		return
	}
	if a < lo || a >= hi {
		t.Fatalf("%s: lookupSpan(%#x): span [%#x, %#x) does not hold it", what, a, lo, hi)
	}
	for _, b := range []uint64{lo, lo + (hi-lo)/2, hi - 1} {
		if s, ok := lookup(b); s != want || !ok {
			t.Fatalf("%s: lookupSpan(%#x) = %+v for [%#x, %#x), but lookup(%#x) = %+v, %v", what, a, want, lo, hi, b, s, ok)
		}
	}
}

// TestLookupSpan: Kernel.LookupSpan's spans are answered alike by
// Lookup, for the parsed table and its cache, of a kernel's symbols and
// of a table with a function over the next one's start, an empty entry
// and two entries at one address; a span reaches the next symbol's
// start or its own end.
func TestLookupSpan(t *testing.T) {
	k, err := LoadKallsyms("testdata/kallsyms.txt", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	odd := &table{raw: true, names: []string{"", "outer", "inner", "label", "twin1", "twin2"}, entries: []entry{
		{start: 0x100, end: 0x200, name: 1}, {start: 0x150, end: 0x160, name: 2}, {start: 0x300, end: 0x300, name: 3},
		{start: 0x400, end: 0x410, name: 4}, {start: 0x400, end: 0x420, name: 5},
	}}
	for _, tab := range []*table{k.syms, odd} {
		m := mappedOf(t, tab)
		for _, e := range tab.entries {
			for _, a := range []uint64{e.start - 1, e.start, e.start + 1, (e.start + e.end) / 2, e.end - 1, e.end, e.end + 1} {
				checkSpan(t, "parsed", tab.lookup, tab.lookupSpan, a)
				if tab != odd { // a cache's entries are in strictly increasing order
					checkSpan(t, "mapped", m.lookup, m.lookupSpan, a)
				}
			}
		}
	}
	kk := &Kernel{syms: odd}
	for _, c := range []struct{ a, lo, hi uint64 }{
		{0x120, 0x100, 0x150}, // outer, up to inner's start
		{0x155, 0x150, 0x160}, // inner
		{0x405, 0x405, 0x406}, // past two entries at one address: its own
	} {
		if _, lo, hi, ok := kk.LookupSpan(c.a); !ok || lo != c.lo || hi != c.hi {
			t.Errorf("LookupSpan(%#x) = [%#x, %#x), %v; want [%#x, %#x)", c.a, lo, hi, ok, c.lo, c.hi)
		}
	}
}
