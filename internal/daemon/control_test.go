package daemon

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRunningReadsPIDFileSafely: the pid file is read under the trust
// policy: a FIFO in its place does not block, and it and a file another
// user owns read as a stale pid file, never as a running daemon.
func TestRunningReadsPIDFileSafely(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, PIDFile)
	if pid, stale, err := Running(dir); pid != 0 || stale || err != nil {
		t.Fatalf("no pid file: %d, %v, %v", pid, stale, err)
	}
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stale, err := Running(dir); !stale || err != nil {
		t.Errorf("a FIFO for a pid file: stale %v, err %v; want stale", stale, err)
	}
	os.Remove(path)
	os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
	if pid, stale, _ := Running(dir); pid != os.Getpid() || !stale {
		t.Errorf("a pid file naming a process that is no daemon: %d, stale %v", pid, stale)
	}
	if os.Geteuid() == 0 {
		os.Chown(path, 65534, 65534)
		if pid, stale, _ := Running(dir); pid != 0 || !stale {
			t.Errorf("a pid file another user owns: %d, stale %v; want it disregarded", pid, stale)
		}
	}
}
