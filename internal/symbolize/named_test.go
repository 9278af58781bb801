package symbolize

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/trust"
)

// TestNamedFiles: an image path comes from a recording, which any user
// can shape; a FIFO or a device there is refused without blocking, and
// an image that a process of another user mapped is read with that
// user's rights.
func TestNamedFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Options{DebugDirs: []string{}, BuildIDCaches: []string{}})
	done := make(chan error, 1)
	go func() {
		_, err := s.Open(fifo, "")
		if err == nil {
			_, err = s.Open("/dev/zero", "")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, trust.ErrUntrusted) {
			t.Errorf("a FIFO or a device as an image: %v, want refused", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opening a FIFO as an image blocked")
	}

	if os.Geteuid() != 0 {
		t.Skip("reading with a process's user's rights is what root's jitprof does")
	}
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.ReadFile("/usr/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "root-only")
	if err := os.WriteFile(secret, self, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenAs(secret, "", trust.Cred{UID: 54321, GID: 54321}); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("a root-only image that uid 54321's process is said to have mapped: %v, want permission denied", err)
	}
	if _, err := s.OpenAs(secret, "", trust.Root); err != nil {
		t.Errorf("the same image mapped by root's process: %v", err)
	}
}
