package trust

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// otherUID is a user that is not the one running the tests: as root,
// chown gives it files without an account.
const otherUID = 54321

// TestOpenOwnDir: a directory jitprof writes into is refused when
// another user can write it or a directory above it, or when its path
// has a symlink; refused directories are left as they were.
func TestOpenOwnDir(t *testing.T) {
	base := t.TempDir()
	mkdir := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := mkdir("good", 0o700)
	if err := os.Symlink(good, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	world := mkdir("world", 0o777)
	sticky := mkdir("sticky", os.ModeSticky|0o777)
	cases := []struct {
		path   string
		create bool
		why    string // "" accepts
	}{
		{good, false, ""},
		{filepath.Join(good, "new", "dir"), true, ""},
		{filepath.Join(good, "missing"), false, "no such file"},
		{filepath.Join(base, "link"), false, "symlink"},
		{filepath.Join(base, "link", "below"), true, "symlink"},
		{world, false, "writable by others"},
		{filepath.Join(world, "below"), true, "writable by others"},
	}
	if os.Geteuid() == 0 {
		// A sticky directory above is root's only when root made it.
		cases = append(cases, struct {
			path   string
			create bool
			why    string
		}{filepath.Join(sticky, "below"), true, ""})
		group := mkdir("group", 0o770)
		theirs := mkdir("theirs", 0o700)
		if err := os.Chown(theirs, otherUID, otherUID); err != nil {
			t.Fatal(err)
		}
		mine := mkdir("theirs/mine", 0o700) // root's, below theirs
		cases = append(cases, []struct {
			path   string
			create bool
			why    string
		}{
			{group, false, "writable by its group"},
			{theirs, false, "owned by uid 54321"},
			{mine, false, "owned by uid 54321, who could replace"},
			{filepath.Join(mine, "new"), true, "owned by uid 54321"},
		}...)
	}
	for _, c := range cases {
		root, err := OpenOwnDir(c.path, c.create)
		switch {
		case c.why == "" && err != nil:
			t.Errorf("OpenOwnDir(%s): %v", c.path, err)
		case c.why != "" && (err == nil || !strings.Contains(err.Error(), c.why)):
			t.Errorf("OpenOwnDir(%s) = %v, want an error saying %q", c.path, err, c.why)
		case c.why != "" && !errors.Is(err, ErrUntrusted) && c.why != "no such file":
			t.Errorf("OpenOwnDir(%s): %v does not wrap ErrUntrusted", c.path, err)
		}
		if root != nil {
			// The root is the directory asked for.
			var a, b unix.Stat_t
			if err := unix.Stat(c.path, &a); err != nil {
				t.Fatal(err)
			}
			f, err := root.Open(".")
			if err != nil {
				t.Fatal(err)
			}
			unix.Fstat(int(f.Fd()), &b)
			f.Close()
			if a.Ino != b.Ino || a.Dev != b.Dev {
				t.Errorf("OpenOwnDir(%s) opened another directory", c.path)
			}
			root.Close()
		}
	}
	// Nothing was made below a refused directory.
	for _, p := range []string{filepath.Join(world, "below"), filepath.Join(good, "below")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}
}

// TestOpenEntry: an entry is opened on the directory's descriptor and
// never through a link, even one that stays inside the directory.
func TestOpenEntry(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o600)
	os.Symlink("file", filepath.Join(dir, "inside"))
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if f, err := OpenEntry(root, "file", os.O_RDONLY, 0); err != nil {
		t.Errorf("a regular file: %v", err)
	} else {
		f.Close()
	}
	if f, err := OpenEntry(root, "inside", os.O_RDONLY, 0); !errors.Is(err, ErrUntrusted) {
		if f != nil {
			f.Close()
		}
		t.Errorf("a link inside the directory: %v, want a refusal", err)
	}
	if _, err := OpenEntry(root, "a/b", os.O_RDONLY, 0); err == nil {
		t.Error("a path of two entries was opened")
	}
}

// TestOpenOwnCache: jitprof's own cache file opens; one that group or
// others could write, or over its limit, does not.
func TestOpenOwnCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache")
	if err := os.WriteFile(path, []byte("table"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := OpenOwnCache(path, 1<<10)
	if err != nil {
		t.Fatalf("own cache refused: %v", err)
	}
	f.Close()
	if _, err := OpenOwnCache(path, 2); err == nil {
		t.Error("a cache over its limit opened")
	}
	if err := os.Chmod(path, 0o664); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenOwnCache(path, 1<<10); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("a group-writable cache: %v, want refused", err)
	}
}
