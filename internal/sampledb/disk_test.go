package sampledb

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// fsizeLimit is the file-size limit fsizeWriter runs under: a table of
// 4096 slots fits, one of 8192 (262,656 bytes) does not.
const fsizeLimit = 256 << 10

// fsizeWriter is the child of TestFileSizeLimit: under RLIMIT_FSIZE, a
// file that must grow past the limit fails to flush with ErrNoSpace (the
// kernel's EFBIG; SIGXFSZ is ignored by the Go runtime), the DB keeps
// counting, and the file holds what fit.
func fsizeWriter(dir string) int {
	fail := func(format string, a ...any) int {
		fmt.Printf(format+"\n", a...)
		return 1
	}
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: fsizeLimit, Max: fsizeLimit}); err != nil {
		return fail("setrlimit: %v", err)
	}
	db, err := Create(dir, Options{Events: testEvents})
	if err != nil {
		return fail("create: %v", err)
	}
	img, _ := db.FileImage(FileIdent{}, "/big", ImageInfo{})
	for k := range uint64(10000) {
		db.Add(&Sample{Image: img, Key1: k})
	}
	err = db.Flush()
	if !errors.Is(err, ErrNoSpace) || !errors.Is(err, unix.EFBIG) {
		return fail("flush past the limit: %v, want ErrNoSpace and EFBIG", err)
	}
	for k := range uint64(10) {
		if err := db.Add(&Sample{Image: img, Key1: k}); err != nil {
			return fail("add after the error: %v", err)
		}
	}
	if err := db.Flush(); !errors.Is(err, ErrNoSpace) {
		return fail("second flush: %v", err)
	}
	sel, err := Select(dir, &Spec{})
	if err != nil || len(sel.Files) != 1 {
		return fail("select: %v %v", sel, err)
	}
	r, err := Open(dir, sel.Files[0])
	if err != nil {
		return fail("open: %v", err)
	}
	var inFile uint64
	for e := range r.Entries() {
		inFile += e.Count
	}
	// The keys that fit, and the second flush's samples of those.
	if st := db.Stats(); r.Len() != 4095 || st.Flushed != inFile || inFile <= 4095 || st.Samples != 10010 || st.Dirty != 1 || st.Dropped != 0 {
		return fail("stats %+v, the file has %d keys counting %d", st, r.Len(), inFile)
	}
	r.Close()
	db.Close()
	fmt.Println("ok")
	return 0
}

func TestFileSizeLimit(t *testing.T) {
	cmd := helper(t, "fsize", t.TempDir())
	out, err := cmd.Output()
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("child: %v: %s", err, out)
	}
}

// TestFullDisk fills a small tmpfs: flushes fail with ErrNoSpace, counting
// goes on, every file on the full disk reads, and once there is room
// again every sample reaches its file.
func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=256k,mode=0700"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	db, err := Create(dir, Options{Separate: SeparateThread, Events: testEvents})
	if err != nil {
		t.Fatal(err)
	}
	img := must[ImageID](t)(db.FileImage(FileIdent{}, "/bin/x", ImageInfo{}))
	var full error
	var added uint64
	for round := uint64(0); full == nil && round < 1000; round++ {
		for tid := range uint32(10) {
			for k := range 50 + 40*round {
				db.Add(&Sample{Image: img, TGID: 1, TID: tid, Key1: k})
				added++
			}
		}
		full = db.Flush()
	}
	t.Logf("full after %d samples: %v", added, full)
	if !errors.Is(full, ErrNoSpace) || !errors.Is(full, unix.ENOSPC) {
		t.Fatalf("flush on a full disk: %v", full)
	}
	for range 3 {
		db.Add(&Sample{Image: img, TGID: 1, TID: 99, Key1: 1})
		added++
		if err := db.Flush(); !errors.Is(err, ErrNoSpace) {
			t.Fatalf("flush on a full disk again: %v", err)
		}
	}
	readSession(t, dir) // every file reads
	if st := db.Stats(); st.Samples != added || st.Dropped != 0 {
		t.Fatalf("stats %+v, %d added", st, added)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_REMOUNT, "size=64m"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("flush with room again: %v", err)
	}
	var total uint64
	for _, m := range readSession(t, dir) {
		for _, n := range m {
			total += n
		}
	}
	if total != added {
		t.Errorf("%d samples in the files, %d added", total, added)
	}
}
