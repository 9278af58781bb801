package symbolize

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/trust"
)

// TestSymbolCache: with SymbolCache, an image's function table is kept
// and the next Symbolizer maps it, answering every lookup as the table
// read from the file; a changed debug file makes a new table; an image
// without a build-id is not kept.
func TestSymbolCache(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(t.TempDir(), "cache")
	t.Setenv("JITPROF_CACHE_DIR", cache)
	bin := gcc(t, dir, "prog", "testdata/prog.c")
	open := func() *Image {
		t.Helper()
		im, err := New(Options{SymbolCache: true, DebugDirs: []string{}, BuildIDCaches: []string{}}).Open(bin, "")
		if err != nil {
			t.Fatal(err)
		}
		return im
	}
	first := open()
	parsed, ok := first.syms.(*table)
	if !ok {
		t.Fatal("the first load came from a cache")
	}
	kept, _ := filepath.Glob(filepath.Join(cache, "symbols", "sym-*"))
	if len(kept) != 1 {
		t.Fatalf("%d tables kept, want 1", len(kept))
	}
	second := open()
	if _, ok := second.syms.(*mappedTable); !ok {
		t.Fatal("the second load did not map the kept table")
	}
	if second.NumSymbols() != first.NumSymbols() || !second.HasFunction("main") {
		t.Errorf("from the cache: %d symbols, main %v; read: %d", second.NumSymbols(), second.HasFunction("main"), first.NumSymbols())
	}
	for _, e := range parsed.entries {
		for _, a := range []uint64{e.start, e.end - 1, e.end} {
			want, wok := first.LookupAddr(a)
			if got, gok := second.LookupAddr(a); got != want || gok != wok {
				t.Errorf("LookupAddr(%#x) = %+v, %v from the cache; %+v, %v read", a, got, gok, want, wok)
			}
		}
	}

	// The same image with a debug file, and again once the debug file
	// changed: two more tables.
	key0, _ := scacheKey(first.BuildID(), nil)
	dbg := filepath.Join(dir, "prog.debug")
	run(t, "objcopy", "--only-keep-debug", bin, dbg)
	f, err := openELF(dbg, trust.Unknown)
	if err != nil {
		t.Fatal(err)
	}
	key1, ok1 := scacheKey(first.BuildID(), f)
	f.Close()
	later := time.Now().Add(time.Hour)
	os.Chtimes(dbg, later, later)
	f, err = openELF(dbg, trust.Unknown)
	if err != nil {
		t.Fatal(err)
	}
	key2, ok2 := scacheKey(first.BuildID(), f)
	f.Close()
	if !ok1 || !ok2 || key0 == key1 || key1 == key2 {
		t.Errorf("keys without a debug file, with it, with it changed: %s, %s (%v), %s (%v): want three", key0, key1, ok1, key2, ok2)
	}
	if _, ok := scacheKey("", nil); ok {
		t.Error("an image without a build-id has a key")
	}
}

// TestSymbolCacheRealImages: the tables of real images, whose symbols
// overlap (Node's, libgmp's) or end where they start, are kept and mapped
// by the next Symbolizer, answering lookups as read. A table the cache
// refused used to be read from the file and written again by every
// report.
func TestSymbolCacheRealImages(t *testing.T) {
	t.Setenv("JITPROF_CACHE_DIR", t.TempDir())
	paths := []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libgmp.so.10"}
	if node, err := exec.LookPath("node"); err == nil {
		paths = append(paths, node)
	}
	opts := Options{SymbolCache: true, DebugDirs: []string{}, BuildIDCaches: []string{}}
	tried := 0
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		tried++
		first, err := New(opts).Open(p, "")
		if err != nil {
			t.Fatal(err)
		}
		parsed, ok := first.syms.(*table)
		if !ok || first.BuildID() == "" {
			t.Fatalf("%s: the first load came from a cache, or the image has no build-id", p)
		}
		second, err := New(opts).Open(p, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := second.syms.(*mappedTable); !ok {
			t.Errorf("%s: the second load did not map the kept table", p)
			continue
		}
		for i := 0; i < len(parsed.entries); i += 7 {
			e := parsed.entries[i]
			for _, a := range []uint64{e.start, e.end - 1, e.end} {
				want, wok := first.LookupAddr(a)
				if got, gok := second.LookupAddr(a); got != want || gok != wok {
					t.Fatalf("%s: LookupAddr(%#x) = %+v, %v from the cache; %+v, %v read", p, a, got, gok, want, wok)
				}
			}
		}
	}
	if tried == 0 {
		t.Fatal("none of the images is here")
	}
}
