package trust

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestOpenNamedTypes(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("int main;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, reason string
	}{
		{good, ""},
		{link, ""}, // symlinks are followed, with the reader's rights
		{fifo, "not a regular file (a FIFO)"},
		{"/dev/null", "not a regular file (a character device)"},
		{dir, "not a regular file (a directory)"},
	} {
		f, err := OpenNamed(tc.path, Unknown, 0)
		if tc.reason == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.path, err)
				continue
			}
			b, _ := io.ReadAll(f)
			f.Close()
			if string(b) != "int main;\n" {
				t.Errorf("%s: read %q", tc.path, b)
			}
			continue
		}
		if err == nil {
			f.Close()
			t.Errorf("%s: opened, want refused: %s", tc.path, tc.reason)
		} else if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.reason)
		}
	}
	if _, err := OpenNamed(good, Unknown, 3); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("limit 3: %v", err)
	}
}

// TestOpenNamedAsUser: as root, a file is opened with the rights of the
// user whose data named it: the kernel checks the path and the file as
// for that user, supplementary groups and all.
func TestOpenNamedAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reading with another user's rights is what root's jitprof does; as a user OpenNamed reads with the user's own")
	}
	const uid, gid = 54321, 54321 // no passwd entry needed
	user := Cred{uid, gid}
	dir := t.TempDir()
	// The test's directory and the one above it are 0700, root's.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name string, mode os.FileMode, owner Cred) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("secret\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, owner.UID, owner.GID); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rootOnly := write("root-only", 0o600, Root)
	rootGroup := write("root-group", 0o640, Root) // root's supplementary group 0 must not count
	public := write("public", 0o644, Root)
	theirs := write("theirs", 0o600, user)
	link := filepath.Join(dir, "link-to-root-only")
	if err := os.Symlink(rootOnly, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, uid, gid); err != nil {
		t.Fatal(err)
	}
	hidden := filepath.Join(dir, "hidden")
	if err := os.Mkdir(hidden, 0o700); err != nil {
		t.Fatal(err)
	}
	inHidden := filepath.Join(hidden, "public")
	if err := os.WriteFile(inHidden, []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{rootOnly, false},
		{rootGroup, false},
		{public, true},
		{theirs, true},
		{link, false},
		{inHidden, false}, // a readable file in a directory the user cannot search
	} {
		f, err := OpenNamed(tc.path, user, 0)
		if f != nil {
			f.Close()
		}
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s as uid %d: %v", tc.path, uid, err)
		case !tc.ok && err == nil:
			t.Errorf("%s as uid %d: opened, want permission denied", tc.path, uid)
		case !tc.ok && !errors.Is(err, fs.ErrPermission):
			t.Errorf("%s as uid %d: %v, want permission denied", tc.path, uid, err)
		}
	}
	// The rest of the process keeps root's rights.
	for _, p := range []string{rootOnly, inHidden} {
		if f, err := OpenNamed(p, Root, 0); err != nil {
			t.Errorf("%s as root: %v", p, err)
		} else {
			f.Close()
		}
		if _, err := os.ReadFile(p); err != nil {
			t.Errorf("os.ReadFile(%s) after reads as uid %d: %v", p, uid, err)
		}
	}
}

// TestOpenRecording: -i takes a regular file or a FIFO of the user's or
// root's; another owner's is refused (unless force) before it is opened
// for reading, so that a FIFO no one writes cannot block, and a device
// is refused without being opened.
func TestOpenRecording(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "perf.data")
	if err := os.WriteFile(file, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(file, link)
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{file, link} { // -i's path is the user's: links are followed
		f, err := OpenRecording(path, false)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if b, _ := io.ReadAll(f); string(b) != "data" {
			t.Errorf("%s reads %q", path, b)
		}
		f.Close()
	}
	for _, path := range []string{"/dev/null", dir} {
		if _, err := OpenRecording(path, true); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "not a regular file or a pipe") {
			t.Errorf("%s: %v, want a refusal", path, err)
		}
	}
	// The user's own FIFO waits for its writer, then reads as a stream.
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			w.WriteString("stream")
			w.Close()
		}
	}()
	f, err := OpenRecording(fifo, false)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(f); string(b) != "stream" {
		t.Errorf("the FIFO reads %q", b)
	}
	f.Close()
	if os.Geteuid() != 0 {
		t.Skip("a file of another user needs root to make")
	}
	// Another user's FIFO, which no one writes: refused at once.
	if err := os.Chown(fifo, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := OpenRecording(fifo, false)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("another user's FIFO: %v, want a refusal", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OpenRecording blocked on another user's FIFO")
	}
}
