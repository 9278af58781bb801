package sampledb

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSessionBounds: a session at its bound of files refuses samples
// that need a new file and goes on counting into the files it has; at
// its bound of bytes a file no longer grows, new keys are dropped and
// the keys it holds go on counting; both are counted as refused, and a
// session continued later counts the files it already has.
func TestSessionBounds(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Events: testEvents, Host: "testhost", MaxFiles: 3, MaxBytes: 3*fileSize(minCapacity) + fileSize(2*minCapacity) - fileSize(minCapacity)}
	db, err := Create(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	m := must[ImageID](t)
	var imgs []ImageID
	for i := range 5 {
		imgs = append(imgs, m(db.AnonImage(uint32(100+i), 0x1000, 0x2000, "")))
	}
	add := func(im ImageID, key uint64) error {
		return db.Add(&Sample{App: im, Image: im, TGID: All, TID: All, CPU: All, Key1: key})
	}
	for _, im := range imgs {
		if err := add(im, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatalf("a flush at the bound is no error: %v", err)
	}
	st := db.Stats()
	if st.DiskFiles != 3 || st.Refused != 2 || st.Dropped != 2 {
		t.Fatalf("after 5 files' samples: %d files on disk, %d refused, %d dropped; want 3, 2, 2", st.DiskFiles, st.Refused, st.Dropped)
	}
	if err := add(imgs[4], 1); !errors.Is(err, ErrSessionFull) {
		t.Errorf("a sample for a refused file: %v, want ErrSessionFull", err)
	}
	// The first file may grow once (to its second capacity); the second
	// may not grow at all.
	for k := uint64(2); k <= 3*minCapacity; k++ {
		add(imgs[0], k)
		add(imgs[1], k)
	}
	add(imgs[1], 1) // a key it holds
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	st = db.Stats()
	if st.DiskBytes > opts.MaxBytes {
		t.Errorf("session of %d bytes, bound %d", st.DiskBytes, opts.MaxBytes)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	got := readSession(t, dir)
	counted := map[int]int{}
	for name, keys := range got {
		for i, im := range []uint32{100, 101, 102, 103, 104} {
			if filepath.Base(filepath.Dir(name)) == filepath.Base(filepath.Dir(anonName(im))) {
				counted[i] = len(keys)
			}
		}
	}
	// File 0: room for 2*minCapacity-1 keys (node 0 is never used);
	// file 1: minCapacity-1; both kept key 1.
	if counted[0] != 2*minCapacity-1 || counted[1] != minCapacity-1 {
		t.Errorf("keys counted: %v, want %d in the first file and %d in the second", counted, 2*minCapacity-1, minCapacity-1)
	}
	if len(got) != 3 {
		t.Errorf("%d files, want 3", len(got))
	}
	// Continued, the session knows its files: the bound holds.
	db, err = Create(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if st := db.Stats(); st.DiskFiles != 3 {
		t.Errorf("a continued session counts %d files, want 3", st.DiskFiles)
	}
	im := m(db.AnonImage(200, 0x1000, 0x2000, ""))
	add(im, 1)
	db.Flush()
	if st := db.Stats(); st.DiskFiles != 3 || st.Refused != 1 {
		t.Errorf("continued: %d files, %d refused; want 3, 1", st.DiskFiles, st.Refused)
	}
	if _, err := os.Stat(filepath.Join(dir, "samples", "current")); err != nil {
		t.Fatal(err)
	}
}

// anonName is the directory of the test's anonymous images.
func anonName(tgid uint32) string {
	n, _ := Name(FileKey{App: Image{Kind: ImageAnon, Name: "anon", TGID: tgid, Start: 0x1000, End: 0x2000},
		Dep: Image{Kind: ImageAnon, Name: "anon", TGID: tgid, Start: 0x1000, End: 0x2000}, Event: "e", Count: 1, TGID: All, TID: All, CPU: All})
	return n
}

// TestKeysBounded: a file whose samples each land on a new key does not
// keep them all in memory: past maxKeys the flushed keys are let go, and
// counting goes on right.
func TestKeysBounded(t *testing.T) {
	db := createDB(t, t.TempDir(), SeparateNone)
	defer db.Close()
	im := must[ImageID](t)(db.AnonImage(1, 0, 1<<40, ""))
	n := uint64(maxKeys + maxKeys/2)
	for k := range n {
		db.Add(&Sample{App: im, Image: im, TGID: All, TID: All, CPU: All, Key1: k})
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, sf := range db.files.all() {
		total += sf.deltas.n
	}
	if total > maxKeys {
		t.Errorf("%d keys kept in memory after a flush, bound %d", total, maxKeys)
	}
	db.Add(&Sample{App: im, Image: im, TGID: All, TID: All, CPU: All, Key1: 7})
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if st := db.Stats(); st.Flushed != n+1 {
		t.Errorf("%d counts flushed, want %d", st.Flushed, n+1)
	}
}
