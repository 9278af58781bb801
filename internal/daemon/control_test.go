package daemon

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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

// TestControlSocket: the control socket is made over a stale one, mode
// 0600; a request and its answer cross it, a line that is no request is
// answered so; closing the listener ends serve's pending accept and
// removes the socket file, after which Ask finds no daemon.
func TestControlSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, SocketFile)
	staleSocket(t, path)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	ln, err := listen(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the socket: %v, %v; want a socket of mode 0600", fi.Mode(), err)
	}
	reqs := make(chan request)
	served, done, quit := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var inflight sync.WaitGroup
	inflight.Add(1)
	go func() {
		serve(ln, reqs, done, &inflight)
		close(served)
	}()
	go func() {
		for {
			select {
			case r := <-reqs:
				r.reply <- response{Status: &Status{PID: 42, Target: r.Op + " " + r.Name}}
			case <-quit:
				return
			}
		}
	}()

	st, err := Ask(dir, "save", "x")
	if err != nil || st == nil || st.PID != 42 || st.Target != "save x" {
		t.Fatalf("Ask: %+v, %v; want pid 42, target \"save x\"", st, err)
	}
	c, err := dial(path, path)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(time.Minute))
	c.WriteString("no json\n")
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || !strings.Contains(line, "bad request") {
		t.Errorf("a line that is no request: %q, %v; want a bad request error", line, err)
	}
	c.Close()

	// The daemon's loop takes no more requests: one is answered so, not
	// left waiting.
	close(quit)
	close(done)
	if _, err := Ask(dir, "status", ""); err == nil || !strings.Contains(err.Error(), "stopping") {
		t.Errorf("Ask of a stopping daemon: %v; want an error saying it is stopping", err)
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("serve still accepting after the listener was closed")
	}
	start := time.Now()
	waitAnswered(&inflight, 10*time.Second)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("waitAnswered waited %v for a server with nothing in flight", d)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the socket file after Close: %v; want it removed", err)
	}
	if _, err := Ask(dir, "status", ""); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Ask after Close: %v; want ErrNotRunning", err)
	}
}

// TestAskNoDaemon: Ask on a directory with no socket, or with a socket
// a killed daemon left (no one listens: ECONNREFUSED), says no daemon
// runs there and names the directory.
func TestAskNoDaemon(t *testing.T) {
	dir := t.TempDir()
	_, err := Ask(dir, "status", "")
	if !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), dir) {
		t.Errorf("no socket: %v; want ErrNotRunning naming %s", err, dir)
	}
	staleSocket(t, filepath.Join(dir, SocketFile))
	if _, err := Ask(dir, "status", ""); !errors.Is(err, ErrNotRunning) {
		t.Errorf("a stale socket: %v; want ErrNotRunning", err)
	}
}

// TestSocketDeepDir: a session directory deeper than a unix socket's
// address can name has its socket all the same: it is bound and
// reached through the directory's descriptor.
func TestSocketDeepDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	ln, err := listen(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	reqs := make(chan request)
	var inflight sync.WaitGroup
	inflight.Add(1)
	go serve(ln, reqs, nil, &inflight)
	go func() {
		for r := range reqs {
			r.reply <- response{Status: &Status{PID: 42}}
		}
	}()
	defer close(reqs)
	defer ln.Close()
	if st, err := Ask(dir, "status", ""); err != nil || st.PID != 42 {
		t.Errorf("Ask: %+v, %v", st, err)
	}
}

// staleSocket leaves at path a socket no one listens on, as a killed
// daemon does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
}
