package anon

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReads: Unchanged says a claim would read the same only while each
// path holds the file it held, unwritten, or still none; and, for a
// file its writer maps (jitlog's), while the word where the reading
// stopped is still unclaimed, whatever the file's times say.
func TestReads(t *testing.T) {
	dir := t.TempDir()
	data, missing := filepath.Join(dir, "data"), filepath.Join(dir, "missing")
	if err := os.WriteFile(data, make([]byte, 128), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &Process{PID: 1, UID: os.Getuid(), GID: os.Getgid()}
	look := func(tail int64) *Reads {
		r := &Reads{}
		if _, err := findData(&Process{PID: 1, UID: p.UID, GID: p.GID, Reads: r}, []string{missing, data}); err != nil {
			t.Fatal(err)
		}
		if tail >= 0 {
			r.until(data, tail)
		}
		return r
	}
	if r := look(-1); !r.Unchanged(p) {
		t.Fatalf("unchanged files: changed (%+v)", r)
	}
	var zero *Reads
	if zero.Unchanged(p) || (&Reads{}).Unchanged(p) {
		t.Error("nil or empty Reads: unchanged")
	}

	// Written: the file's times and size say so.
	r := look(-1)
	f, err := os.OpenFile(data, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("more"))
	f.Close()
	if r.Unchanged(p) {
		t.Error("a file appended to: unchanged")
	}

	// A word claimed where the reading stopped, the times as they were
	// (a writer through a shared mapping sets none): changed. Another
	// word written: unchanged.
	r = look(64)
	if !r.Unchanged(p) {
		t.Fatal("a mapped file, unwritten: changed")
	}
	f, err = os.OpenFile(data, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{8}, 64)
	f.Close()
	rewritten := look(-1).files[1].id // the times now, as if the write had not set them
	r.files[1].id = rewritten
	if r.Unchanged(p) {
		t.Error("a record claimed where the reading stopped: unchanged")
	}
	r = look(72)
	r.files[1].id = rewritten
	if !r.Unchanged(p) {
		t.Error("nothing claimed where the reading stopped: changed")
	}

	// Written after the trust checks, before the claim's stat: the size
	// recorded is the one read, and the next look sees more.
	f, err = os.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	r = &Reads{}
	r.found(data, f, fi.Size()-4)
	f.Close()
	if r.Unchanged(p) {
		t.Error("a file grown between the checks and the stat: unchanged")
	}

	// A file where there was none.
	r = look(-1)
	if err := os.WriteFile(missing, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r.Unchanged(p) {
		t.Error("a file where there was none: unchanged")
	}
	os.Remove(missing)

	// Another file at the path (renamed over it).
	r = look(-1)
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, make([]byte, 128), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, data); err != nil {
		t.Fatal(err)
	}
	if r.Unchanged(p) {
		t.Error("another file at the path: unchanged")
	}

	// Embedded data cannot be checked.
	r = &Reads{}
	if _, err := findData(&Process{PID: 1, Embedded: map[string][]byte{data: nil}, Reads: r}, []string{data}); err != nil {
		t.Fatal(err)
	}
	if r.Unchanged(p) {
		t.Error("embedded data: unchanged")
	}
}
