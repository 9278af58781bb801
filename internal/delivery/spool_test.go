package delivery

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func batch(i, size int) []byte {
	return bytes.Repeat([]byte{byte(i)}, size)
}

func openSpool(t *testing.T, dir string, max int64) *Spool {
	t.Helper()
	s, err := OpenSpoolDir(dir, max)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// drain takes every batch out, oldest first, returning their first bytes.
func drain(t *testing.T, s *Spool) []int {
	t.Helper()
	var got []int
	for {
		seq, b, err := s.Oldest()
		if errors.Is(err, ErrEmpty) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, int(b[0]))
		s.Remove(seq)
	}
}

// TestSpoolOrderAndRestart: batches come out oldest first, and those not
// taken are there after the spool is opened again.
func TestSpoolOrderAndRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	s := openSpool(t, dir, 1<<20)
	for i := range 5 {
		if err := s.Put(batch(i, 100)); err != nil {
			t.Fatal(err)
		}
	}
	seq, b, err := s.Oldest()
	if err != nil || b[0] != 0 {
		t.Fatalf("Oldest: %v, %v", b[:1], err)
	}
	s.Remove(seq)
	if st := s.Stats(); st.Queued != 4 || st.QueuedBytes != 4*(100+spoolHeader) {
		t.Errorf("stats %+v, want 4 batches of %d bytes", st, 100+spoolHeader)
	}
	s.Close()
	// A batch whose writing was cut is gone at the next open.
	if err := os.WriteFile(filepath.Join(dir, ".00000000000000ff.tmp"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = openSpool(t, dir, 1<<20)
	defer s.Close()
	if err := s.Put(batch(5, 100)); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, s); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Errorf("batches %v after a restart, want 1 to 5", got)
	}
	if _, err := os.Stat(filepath.Join(dir, ".00000000000000ff.tmp")); !os.IsNotExist(err) {
		t.Errorf("the cut batch is still there: %v", err)
	}
}

// TestSpoolLast: the batch put last comes out of memory, as it was put
// (not as the caller's buffer is now), until another is put; then, and
// after a restart, batches are read from their files, which go only when
// removed.
func TestSpoolLast(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	s := openSpool(t, dir, 1<<20)
	b := batch(1, 100)
	if err := s.Put(b); err != nil {
		t.Fatal(err)
	}
	b[0] = 9
	// Batch 1's file changed behind the spool's back: not read.
	if err := os.WriteFile(filepath.Join(dir, spoolName(1)), appendBatch(nil, batch(7, 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	seq, got, err := s.Oldest()
	if err != nil || got[0] != 1 || len(got) != 100 {
		t.Fatalf("Oldest: %d bytes, %v, %v; want batch 1 as put", len(got), got[:1], err)
	}
	s.Release(seq) // a failed attempt: kept
	s.Put(batch(2, 100))
	if seq, got, err = s.Oldest(); err != nil || got[0] != 7 {
		t.Fatalf("Oldest once another was put: %v, %v; want the file's, 7", got[:1], err)
	}
	s.Remove(seq)
	if _, err := os.Stat(filepath.Join(dir, spoolName(1))); !os.IsNotExist(err) {
		t.Errorf("batch 1's file after Remove: %v", err)
	}
	seq, got, err = s.Oldest()
	if err != nil || got[0] != 2 {
		t.Fatalf("Oldest: %v, %v; want 2", got[:1], err)
	}
	s.Release(seq)
	s.Close()
	s = openSpool(t, dir, 1<<20)
	defer s.Close()
	if got := drain(t, s); !slices.Equal(got, []int{2}) {
		t.Errorf("after a restart: %v, want [2] from its file", got)
	}
}

// TestSpoolBound: past its bound the spool drops the oldest batches, but
// not the one being sent, and counts them; a batch over the bound is
// dropped at once.
func TestSpoolBound(t *testing.T) {
	size := int64(100 + spoolHeader)
	s := openSpool(t, filepath.Join(t.TempDir(), "spool"), 3*size)
	defer s.Close()
	for i := range 3 {
		s.Put(batch(i, 100))
	}
	seq, _, err := s.Oldest() // batch 0, being sent
	if err != nil {
		t.Fatal(err)
	}
	s.Put(batch(3, 100))
	s.Put(batch(4, 100))
	if st := s.Stats(); st.Dropped != 2 || st.DroppedBytes != uint64(2*size) || st.Queued != 3 {
		t.Errorf("stats %+v, want 2 dropped, 3 queued", st)
	}
	s.Release(seq)
	if got := drain(t, s); !slices.Equal(got, []int{0, 3, 4}) {
		t.Errorf("batches %v, want 0 (being sent when 1 and 2 were dropped), 3 and 4", got)
	}
	if err := s.Put(batch(9, 1000)); err == nil || !strings.Contains(err.Error(), "over the spool's bound") {
		t.Errorf("a batch over the bound: %v", err)
	}
	if st := s.Stats(); st.Dropped != 3 {
		t.Errorf("%d dropped, want 3", st.Dropped)
	}
}

// TestSpoolUntrusted: what is not a whole batch of jitprof's user is
// dropped, counted and said, never followed or read as a batch.
func TestSpoolUntrusted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	s := openSpool(t, dir, 1<<20)
	s.Put(batch(1, 100))
	s.Put(batch(2, 100))
	s.Put(batch(3, 100))
	s.Close()
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte(spoolMagic+"not yours"), 0o600)
	// Batch 1 becomes a symlink, batch 2 is cut short; 3 is whole.
	if err := os.Remove(filepath.Join(dir, spoolName(1))); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, spoolName(1))); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, spoolName(2)), 50); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "README"), []byte("not a batch"), 0o600)
	s = openSpool(t, dir, 1<<20)
	defer s.Close()
	var errs []string
	var got []int
	for {
		seq, b, err := s.Oldest()
		if errors.Is(err, ErrEmpty) {
			break
		}
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		got = append(got, int(b[0]))
		s.Remove(seq)
	}
	// The symlink is not a regular file: OpenSpool passed it over.
	if !slices.Equal(got, []int{3}) || len(errs) != 1 || !strings.Contains(errs[0], "a batch of 100 bytes in 26") {
		t.Errorf("batches %v, errors %q: want 3, and batch 2 cut short", got, errs)
	}
	if st := s.Stats(); st.Dropped != 1 {
		t.Errorf("%d dropped, want 1", st.Dropped)
	}
	if b, _ := os.ReadFile(secret); string(b) != spoolMagic+"not yours" {
		t.Error("the symlink's target changed")
	}
	if _, err := os.Stat(filepath.Join(dir, "README")); err != nil {
		t.Errorf("a file not the spool's went: %v", err)
	}
}

// TestSpoolDirRefused: the spool's directory must be jitprof's user's,
// writable by no one else, and not reached through a symlink.
func TestSpoolDirRefused(t *testing.T) {
	open := t.TempDir()
	os.Chmod(open, 0o777)
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(t.TempDir(), link)
	for _, dir := range []string{open, link} {
		if s, err := OpenSpoolDir(dir, 1<<20); err == nil {
			s.Close()
			t.Errorf("%s: opened", dir)
		}
	}
}

// TestSpoolIn: the daemon's spool, one entry of its session directory:
// made 0700, its batches there for the next run; a symlink at its name,
// or a directory others can write, refused.
func TestSpoolIn(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s, err := OpenSpoolIn(root, "spool", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	s.Put(batch(1, 10))
	s.Close()
	if fi, err := os.Stat(filepath.Join(dir, "spool")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("spool directory: %v, %v", fi.Mode(), err)
	}
	s, err = OpenSpoolIn(root, "spool", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got := drain(t, s); !slices.Equal(got, []int{1}) {
		t.Errorf("opened again, the spool holds %v, want [1]", got)
	}
	s.Close()
	os.Symlink(t.TempDir(), filepath.Join(dir, "link"))
	os.Mkdir(filepath.Join(dir, "open"), 0o700)
	os.Chmod(filepath.Join(dir, "open"), 0o777)
	for _, name := range []string{"link", "open"} {
		if s, err := OpenSpoolIn(root, name, 1<<20); err == nil {
			s.Close()
			t.Errorf("%s: opened", name)
		}
	}
}

// FuzzParseBatch: a spooled file, whatever it holds, gives its batch
// only when its header says that batch: its length and checksum.
func FuzzParseBatch(f *testing.F) {
	for _, b := range [][]byte{nil, []byte("x"), batch(7, 100)} {
		f.Add(appendBatch(nil, b))
	}
	f.Add([]byte(spoolMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseBatch(b)
		if err != nil {
			return
		}
		if !bytes.Equal(appendBatch(nil, got), b) {
			t.Fatalf("%q parsed as the batch %q", b, got)
		}
	})
}

// TestBatchRoundTrip: what appendBatch writes parseBatch reads back.
func TestBatchRoundTrip(t *testing.T) {
	for _, b := range [][]byte{nil, batch(1, 1), batch(2, 70000)} {
		got, err := parseBatch(appendBatch(nil, b))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("a batch of %d bytes came back as %d: %v", len(b), len(got), err)
		}
	}
	bad := appendBatch(nil, batch(3, 10))
	bad[len(bad)-1]++
	if _, err := parseBatch(bad); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("a changed byte: %v", err)
	}
}
