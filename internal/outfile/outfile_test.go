package outfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// names lists dir's entries, to see that no temporary is left behind.
func names(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var l []string
	for _, e := range ents {
		l = append(l, e.Name())
	}
	return strings.Join(l, " ")
}

func TestCreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new")
	// Until Close, the path keeps what it had.
	if got := read(t, path); got != "old" {
		t.Errorf("before Close the path reads %q", got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != "new" {
		t.Errorf("after Close the path reads %q", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode())
	}
	if got := names(t, dir); got != "out.txt" {
		t.Errorf("the directory holds %s", got)
	}
	if err := f.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// TestRefused: a symlink, a FIFO, a device or a directory at the path is
// refused, and left as it was.
func TestRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(target, link)
	devLink := filepath.Join(dir, "null")
	os.Symlink("/dev/null", devLink)
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "nothing"), dangling)
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o700)
	for _, tc := range []struct{ path, why string }{
		{link, "a symlink"},
		{devLink, "a symlink"},
		{dangling, "a symlink"},
		{fifo, "a FIFO"},
		{"/dev/null", "a character device"},
		{sub, "a directory"},
	} {
		f, err := Create(tc.path, 0o600)
		if err == nil {
			f.Abort()
		}
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "refusing to write "+tc.path+": "+tc.why) {
			t.Errorf("Create(%s): %v, want a refusal: %s", tc.path, err, tc.why)
		}
	}
	if got := read(t, target); got != "keep" {
		t.Errorf("the link's target reads %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nothing")); err == nil {
		t.Errorf("the dangling link's target was created")
	}
	if got := names(t, dir); got != "dangling fifo link null sub target" {
		t.Errorf("the directory holds %s", got)
	}
}

// TestReplaceOverLink: a link planted at the path after Create is
// replaced, not followed; with keepOld it becomes PATH.old, still a link.
func TestReplaceOverLink(t *testing.T) {
	for _, keepOld := range []bool{false, true} {
		dir := t.TempDir()
		target := filepath.Join(dir, "target")
		if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "perf.data")
		f, err := Create(path, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		os.Symlink(target, path)
		if err := f.Replace(keepOld); err != nil {
			t.Fatal(err)
		}
		f.WriteString("data")
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if got := read(t, path); got != "data" {
			t.Errorf("keepOld %v: the path reads %q", keepOld, got)
		}
		if got := read(t, target); got != "keep" {
			t.Errorf("keepOld %v: the planted link's target reads %q", keepOld, got)
		}
		if _, err := os.Lstat(path + ".old"); err == nil {
			t.Errorf("keepOld %v: a link was kept as .old (only a non-empty regular file is)", keepOld)
		}
	}
}

// TestKeepOld: perf record's habit, a non-empty previous output becomes
// PATH.old; an empty one is replaced.
func TestKeepOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "perf.data")
	for i, prev := range []string{"first", ""} {
		os.Remove(path + ".old")
		if err := os.WriteFile(path, []byte(prev), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := Create(path, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Replace(true); err != nil {
			t.Fatal(err)
		}
		// In place at once: what is written shows at the path.
		f.WriteString("second")
		if got := read(t, path); got != "second" {
			t.Errorf("%d: after Replace the path reads %q", i, got)
		}
		f.Close()
		old, err := os.ReadFile(path + ".old")
		if prev != "" && string(old) != prev || prev == "" && err == nil {
			t.Errorf("%d: .old reads %q, %v; want %q", i, old, err, prev)
		}
	}
}

// TestAbort: an aborted output leaves the path as it was, before and
// after Replace.
func TestAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	f, err := Create(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Abort()
	if got := names(t, dir); got != "" {
		t.Errorf("after Abort the directory holds %s", got)
	}
	if f, err = Create(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f.Replace(false)
	f.Abort()
	if got := names(t, dir); got != "" {
		t.Errorf("after Replace and Abort the directory holds %s", got)
	}
	// A file put in its place meanwhile is not removed.
	if f, err = Create(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f.Replace(false)
	os.Remove(path)
	os.WriteFile(path, []byte("theirs"), 0o600)
	f.Abort()
	if got := read(t, path); got != "theirs" {
		t.Errorf("Abort removed a file that was not its own: %q", got)
	}
}

// TestPaths: a name of 250 bytes gets a temporary within NAME_MAX; a
// missing directory and a path ending in a slash are errors.
func TestPaths(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, strings.Repeat("n", 250))
	f, err := Create(path, 0o600)
	if err != nil {
		t.Fatalf("a long name: %v", err)
	}
	f.Close()
	if _, err := Create(filepath.Join(dir, "missing", "out"), 0o600); err == nil {
		t.Errorf("no error for a missing directory")
	}
	if _, err := Create(dir+"/", 0o600); err == nil {
		t.Errorf("no error for a directory's path")
	}
}
