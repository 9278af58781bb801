package unwind

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/trust"
)

// Compiling an image's call frame information costs what reading its
// symbols does (libc's .eh_frame is 3,000 FDEs), for every report. With
// Options.Cache the table is kept in jitprof's cache directory, under
// unwind/, named by what the image's tables are made of
// (symbolize.Image.CacheKey: its build-id, its separate debug file, the
// user), and later reports read it. Files unused for cacheAge are
// removed when a table is written. Images without a build-id are
// compiled every time.

// cacheAge is how long a table unused for that long is kept.
const cacheAge = 30 * 24 * time.Hour

// cacheLimit bounds a cache file.
const cacheLimit = 512 << 20

// imageTable returns the table of im, from the cache when cache is set
// and it has one.
func imageTable(im *symbolize.Image, cache bool) (*Table, error) {
	path := ""
	if dir := symbolize.CacheDir(); cache && dir != "" && im.CacheKey() != "" {
		path = filepath.Join(dir, "unwind", "unw-"+im.CacheKey())
		if t, err := loadTable(path); err == nil {
			return t, nil
		}
	}
	cf, err := im.CallFrames()
	if err != nil {
		return nil, fmt.Errorf("unwind: %w", err)
	}
	t, err := Build(Section{cf.EHFrame, cf.EHFrameAddr}, Section{cf.DebugFrame, cf.DebugFrameAddr})
	if t == nil {
		return nil, fmt.Errorf("unwind: %s: %w", im.Path(), err)
	}
	if path != "" {
		storeTable(path, t)
	}
	// A table with some FDEs left out still unwinds the rest.
	return t, nil
}

// loadTable reads a table storeTable wrote: jitprof's own file, opened
// without following links, owned by this user and writable by no other.
func loadTable(path string) (*Table, error) {
	f, err := trust.OpenOwnCache(path, cacheLimit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, cacheLimit))
	if err != nil {
		return nil, err
	}
	t := &Table{}
	if err := t.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	now := time.Now()
	os.Chtimes(path, now, now) // in use: not to be pruned
	return t, nil
}

// storeTable writes t to path through a temporary file, so that a
// reader never sees half a table, and prunes old tables. A cache that
// cannot be written costs only speed.
func storeTable(path string, t *Table) {
	dir := filepath.Dir(path)
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	b, _ := t.MarshalBinary()
	tmp, err := os.CreateTemp(dir, ".cache-*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		return
	}
	old, _ := filepath.Glob(filepath.Join(dir, "unw-*"))
	for _, o := range old {
		if st, err := os.Stat(o); err == nil && time.Since(st.ModTime()) > cacheAge {
			os.Remove(o)
		}
	}
}
