package symbolize

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// An image's function table takes a report most of its time when the
// recording hit many images (a system-wide one: the Go toolchain's
// binaries have 50,000 symbols each): reading every symbol, sorting them
// and merging aliases, each time. With Options.SymbolCache the table an
// image gave is kept in jitprof's cache directory in the kallsyms
// cache's format (kcache.go), and later reports map it. Only images with
// a build-id are kept, named by a hash of what the table is made of: the
// build-id (which names the file's contents, MiniDebugInfo included), the
// separate debug file read (its path, size and modification time, so an
// installed or updated debug package makes a new table) and the user.
// Files untouched for scacheAge are removed when a table is written.

// scacheAge is how long a table unused for that long is kept.
const scacheAge = 30 * 24 * time.Hour

// scacheKey names the table of main with debug; ok is false when main has
// no build-id, or the debug file cannot be described.
func scacheKey(buildID string, debug *elfFile) (string, bool) {
	if buildID == "" {
		return "", false
	}
	h := sha256.New()
	// The number is the version of the rules a table is made by, so that
	// tables made by older rules are not used: 2 since sizeless ELF
	// symbols run past their section's end to the next symbol.
	fmt.Fprintf(h, "jitprof symbols cache 2\n%s\n%d\n", buildID, os.Geteuid())
	if debug != nil {
		f, ok := debug.closer.(*os.File)
		if !ok {
			return "", false
		}
		st, err := f.Stat()
		if err != nil {
			return "", false
		}
		fmt.Fprintf(h, "%s %d %d\n", debug.name, st.Size(), st.ModTime().UnixNano())
	}
	return "sym-" + hex.EncodeToString(h.Sum(nil)[:16]), true
}

// cachedSymbols returns the cached table named key, or nil.
func cachedSymbols(key string, raw bool) symtab {
	dir := CacheDir()
	if dir == "" {
		return nil
	}
	path := filepath.Join(dir, "symbols", key)
	m, err := kcacheLoad(path)
	if err != nil {
		return nil
	}
	now := time.Now()
	os.Chtimes(path, now, now) // in use: not to be pruned
	m.raw = raw
	return m
}

// storeSymbols keeps t under key, and prunes tables unused for scacheAge.
// A cache that cannot be written costs only speed.
func storeSymbols(key string, t *table) {
	dir := CacheDir()
	if dir == "" {
		return
	}
	dir = filepath.Join(dir, "symbols")
	if writeCache(dir, filepath.Join(dir, key), t) != nil {
		return
	}
	old, _ := filepath.Glob(filepath.Join(dir, "sym-*"))
	for _, o := range old {
		if st, err := os.Stat(o); err == nil && time.Since(st.ModTime()) > scacheAge {
			os.Remove(o)
		}
	}
}
