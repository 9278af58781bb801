package unwind

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jitprof/jitprof/internal/symbolize"
)

// TestCache compiles libc's table once into the cache directory and
// reads the same table back from it; a damaged cache file is compiled
// again, not believed.
func TestCache(t *testing.T) {
	const libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(libc); err != nil {
		t.Skipf("%s: %v", libc, err)
	}
	dir := t.TempDir()
	t.Setenv("JITPROF_CACHE_DIR", dir)
	im, err := symbolize.Load(libc, symbolize.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if im.CacheKey() == "" {
		t.Skip("libc has no build-id here")
	}
	built, err := imageTable(im, true)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "unwind", "unw-"+im.CacheKey())
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no cache file: %v", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		t.Errorf("cache file mode %v: readable by others", st.Mode())
	}
	cached, err := loadTable(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cached.addrs, built.addrs) || !slices.Equal(cached.sets, built.sets) || !slices.Equal(cached.rules, built.rules) {
		t.Fatal("the cached table differs from the built one")
	}
	again, err := imageTable(im, true)
	if err != nil || !slices.Equal(again.addrs, built.addrs) {
		t.Fatalf("second table: %v", err)
	}
	// Damaged: cut short. loadTable refuses it; imageTable builds anew.
	if err := os.Truncate(path, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	if _, err := loadTable(path); err == nil {
		t.Error("a cut cache file was read")
	}
	if t2, err := imageTable(im, true); err != nil || !slices.Equal(t2.addrs, built.addrs) {
		t.Errorf("after damage: %v", err)
	}
}
