package jitlog

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
)

// writeDB logs a few records in a fresh directory and returns the path.
func writeDB(t *testing.T) string {
	t.Helper()
	l := openTest(t, Options{Name: "db"})
	if _, err := l.CodeLoad(0x1000, 16, "f", nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return l.Path()
}

func TestReadRefusesUnsafeFiles(t *testing.T) {
	path := writeDB(t)
	dir := filepath.Dir(path)
	link := filepath.Join(dir, "anon.link")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "anon.other")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, b, 0o600); err != nil {
		t.Fatal(err)
	}
	chowned := os.Chown(other, 12345, 12345) == nil
	rootsFile := filepath.Join(dir, "anon.root")
	if err := os.WriteFile(rootsFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "anon.fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		path   string
		opts   *ReadOptions
		unsafe bool
	}{
		{"own file", path, nil, false},
		{"symlink", link, nil, true},
		{"symlink forced", link, &ReadOptions{Force: true}, true},
		{"over the size limit", path, &ReadOptions{Limit: 4096}, true},
		{"over the limit forced", path, &ReadOptions{Limit: 4096, Force: true}, false},
		{"fifo", fifo, nil, true},
		{"other user's file", other, nil, true},
		{"other user's file, expected", other, &ReadOptions{Owner: 12345}, false},
		{"other user's file forced", other, &ReadOptions{Force: true}, false},
		// Root's file proves nothing for another user's process.
		{"root's file for another user", rootsFile, &ReadOptions{Owner: 12345}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.path == other || tt.path == rootsFile) && !chowned {
				t.Skip("only root can give a file to another user, or own one")
			}
			recs, err := Read(tt.path, tt.opts)
			if tt.unsafe {
				if !errors.Is(err, ErrUnsafe) {
					t.Fatalf("error %v, want ErrUnsafe", err)
				}
				if want := tt.path; !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != len(openKinds())+2 {
				t.Errorf("%d records, want header, open, load, close", len(recs))
			}
		})
	}
}

// patchHeader copies the database at src to dst with pid and start time
// replaced, as if another process had written it.
func patchHeader(t *testing.T, src, dst string, pid uint32, start uint64) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	le.PutUint32(b[offPID:], pid)
	le.PutUint64(b[offStartTime:], start)
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCleanup(t *testing.T) {
	if os.Getenv("JITLOG_EXIT_DIR") != "" {
		l, err := Open(Options{Dir: os.Getenv("JITLOG_EXIT_DIR")})
		if err != nil {
			os.Exit(2)
		}
		l.CodeLoad(1, 1, "x", nil)
		os.Exit(0) // no Close: a JIT that just exits
	}
	dir := t.TempDir()
	live, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestCleanup$")
	cmd.Env = append(os.Environ(), "JITLOG_EXIT_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	exited := DatabasePath(dir, cmd.Process.Pid)

	initStart, _, err := linux.Host.Stat(1)
	if err != nil {
		t.Fatal(err)
	}
	reused := DatabasePath(dir, 1)
	patchHeader(t, live.Path(), reused, 1, initStart+1) // pid 1, but not that process
	kept := filepath.Join(dir, "anon.notes")
	if err := os.WriteFile(kept, []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "init-db")
	patchHeader(t, live.Path(), other, 1, initStart) // pid 1 itself: alive
	initDB := DatabasePath(dir, 2_000_000)
	if err := os.Rename(other, initDB); err != nil {
		t.Fatal(err)
	}
	// Not databases, though named like one of a dead process: a file
	// that is not one, a database whose header names another (dead)
	// process, a symlink to a dead process's database, a hard link.
	deadPID := exitedPID(t)
	notDB := DatabasePath(dir, deadPID)
	if err := os.WriteFile(notDB, []byte("notes named like a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	namesDead := DatabasePath(dir, deadPID+3)
	patchHeader(t, live.Path(), namesDead, uint32(deadPID), 1)
	deadDB := filepath.Join(t.TempDir(), "dead-db")
	patchHeader(t, live.Path(), deadDB, uint32(deadPID+1), 1)
	symlinked := DatabasePath(dir, deadPID+1)
	if err := os.Symlink(deadDB, symlinked); err != nil {
		t.Fatal(err)
	}
	linkedTo := filepath.Join(dir, "linked")
	patchHeader(t, live.Path(), linkedTo, uint32(deadPID+2), 1)
	linked := DatabasePath(dir, deadPID+2)
	if err := os.Link(linkedTo, linked); err != nil {
		t.Fatal(err)
	}

	removed, err := Cleanup(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{exited: true, reused: true}
	for _, p := range removed {
		if !want[p] {
			t.Errorf("removed %s", p)
		}
		delete(want, p)
	}
	for p := range want {
		t.Errorf("kept %s", p)
	}
	for _, p := range []string{live.Path(), kept, initDB, notDB, namesDead, symlinked, deadDB, linked} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := live.CodeLoad(2, 2, "still logging", nil); err != nil {
		t.Error(err)
	}
}

// exitedPID returns the pid of a process that has exited.
func exitedPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestCleanupChecksDirectory: the directory is checked as the writers
// check theirs, and no link to it is followed.
func TestCleanupChecksDirectory(t *testing.T) {
	db := writeDB(t)
	dir := filepath.Dir(db)
	pid := exitedPID(t)
	dead := DatabasePath(dir, pid)
	patchHeader(t, db, dead, uint32(pid), 1)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if removed, err := Cleanup(link); !errors.Is(err, ErrUnsafe) || len(removed) > 0 {
		t.Errorf("Cleanup through a symlink: removed %v, %v; want ErrUnsafe", removed, err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if removed, err := Cleanup(dir); !errors.Is(err, ErrUnsafe) || len(removed) > 0 || !strings.Contains(fmt.Sprint(err), "writable by others") {
		t.Errorf("Cleanup of a world-writable directory: removed %v, %v; want ErrUnsafe", removed, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if removed, err := Cleanup(dir); err != nil || len(removed) != 1 || removed[0] != dead {
		t.Errorf("Cleanup of a good directory: removed %v, %v; want %s", removed, err, dead)
	}
}

// TestCleanupAsRoot: root may clean a user's directory, which is then the
// user's: only their dead databases go, not a file of another owner.
func TestCleanupAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("this test needs root, which CI has")
		}
		t.Skip("needs root to give a directory to another user")
	}
	const user = 12345
	db := writeDB(t)
	dir := filepath.Join(t.TempDir(), "jitprof-12345")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	pid := exitedPID(t)
	theirs, planted := DatabasePath(dir, pid), DatabasePath(dir, pid+1)
	patchHeader(t, db, theirs, uint32(pid), 1)
	patchHeader(t, db, planted, uint32(pid+1), 1)
	for _, p := range []string{dir, theirs} {
		if err := os.Chown(p, user, user); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := Cleanup(dir)
	if err != nil || len(removed) != 1 || removed[0] != theirs {
		t.Errorf("Cleanup = %v, %v; want only %s", removed, err, theirs)
	}
	if _, err := os.Stat(planted); err != nil {
		t.Errorf("removed root's file from the user's directory: %v", err)
	}
}
