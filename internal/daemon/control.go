package daemon

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/trust"
)

// SocketFile is the daemon's control socket in the session directory:
// mode 0600, so only the daemon's user (and root) can ask it anything.
const SocketFile = "control"

// request is one client's request, a JSON line on the control socket.
type request struct {
	Op    string `json:"op"` // status, dump, stop, reset, save
	Name  string `json:"name,omitempty"`
	reply chan response
}

// response is the daemon's answer, one JSON line.
type response struct {
	Error  string  `json:"error,omitempty"`
	Status *Status `json:"status,omitempty"`
}

// serve hands each connection's request to the daemon's loop, which
// owns the database, and writes its answer back; once done is closed
// (the daemon stops), a request the loop will not take is answered so.
// inflight counts serve and its connections: the daemon waits for it
// before it exits, or its last answer (to stop) could go unwritten,
// the client reading EOF from a daemon that did what it asked.
func serve(ln *listener, reqs chan<- request, done <-chan struct{}, inflight *sync.WaitGroup) {
	defer inflight.Done() // serve's own, added by the caller
	for {
		c, err := ln.accept()
		if err != nil {
			return
		}
		inflight.Add(1) // while serve's own count is held
		go func() {
			defer inflight.Done()
			defer c.Close()
			c.SetDeadline(time.Now().Add(time.Minute))
			var r request
			line, err := bufio.NewReader(c).ReadBytes('\n')
			if err != nil {
				return
			}
			if err := json.Unmarshal(line, &r); err != nil {
				json.NewEncoder(c).Encode(response{Error: "bad request"})
				return
			}
			r.reply = make(chan response, 1)
			select {
			case reqs <- r:
				json.NewEncoder(c).Encode(<-r.reply)
			case <-done:
				json.NewEncoder(c).Encode(response{Error: "the daemon is stopping"})
			}
		}()
	}
}

// waitAnswered waits, at most limit, for serve and the answers it is
// writing.
func waitAnswered(inflight *sync.WaitGroup, limit time.Duration) {
	ch := make(chan struct{})
	go func() { inflight.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(limit):
	}
}

// ErrNotRunning says no daemon runs on the session directory.
var ErrNotRunning = errors.New("no daemon is running")

// openSession opens session directory dir as trust.OpenOwnDir does (no
// symlink in its path, no other user able to write it or a directory
// above it): everything a command does in it is done through the Root.
// A directory that is not there wraps fs.ErrNotExist.
func openSession(dir string) (*os.Root, error) {
	r, err := trust.OpenOwnDir(dir, false)
	if err != nil {
		return nil, fmt.Errorf("session directory: %w", err)
	}
	return r, nil
}

// Ask sends a request to the daemon of session directory dir and returns
// its status after the request.
func Ask(dir, op, name string) (*Status, error) {
	root, err := openSession(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", dir, ErrNotRunning)
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	d, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	// The socket must be one: connect would follow a link.
	if fi, err := root.Lstat(SocketFile); err != nil || fi.Mode()&fs.ModeSocket == 0 {
		return nil, fmt.Errorf("%s: %w", dir, ErrNotRunning)
	}
	c, err := dial(inDir(d, SocketFile), filepath.Join(dir, SocketFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ECONNREFUSED) {
			return nil, fmt.Errorf("%s: %w", dir, ErrNotRunning)
		}
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Minute))
	b, _ := json.Marshal(request{Op: op, Name: name})
	if _, err := c.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("daemon's answer: %w", err)
	}
	var resp response
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, fmt.Errorf("daemon's answer: %w", err)
	}
	if resp.Error != "" {
		return resp.Status, errors.New(resp.Error)
	}
	return resp.Status, nil
}

// Running returns the pid of the daemon of session directory dir, from
// its pid file: 0 when there is none; stale reports a pid file whose
// process is gone or is not a jitprof daemon (a daemon killed with
// SIGKILL leaves it). A directory another user could write is refused.
func Running(dir string) (pid int, stale bool, err error) {
	root, err := openSession(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer root.Close()
	// Only a regular file (never blocking on a FIFO) of a few bytes
	// that the user running jitprof owns is a pid file; anything else
	// reads as stale.
	f, err := trust.OpenEntry(root, PIDFile, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, false, nil
	case errors.Is(err, trust.ErrUntrusted):
		return 0, true, nil
	case err != nil:
		return 0, false, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > 32 || int(st.Uid) != os.Geteuid() {
		return 0, true, nil
	}
	b, err := io.ReadAll(io.LimitReader(f, 32))
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", filepath.Join(dir, PIDFile), err)
	}
	pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, true, nil
	}
	if !isDaemon(pid) {
		return pid, true, nil
	}
	return pid, false, nil
}

// isDaemon reports whether pid runs `jitprof daemon run`.
func isDaemon(pid int) bool {
	args, err := linux.Host.Cmdline(pid)
	if err != nil {
		return false
	}
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "daemon" && args[i+1] == "run" {
			return true
		}
	}
	return false
}

// RemoveStale removes the pid file and socket a killed daemon left.
func RemoveStale(dir string) {
	root, err := openSession(dir)
	if err != nil {
		return
	}
	defer root.Close()
	root.Remove(PIDFile)
	if fi, err := root.Lstat(SocketFile); err == nil && fi.Mode()&fs.ModeSocket != 0 {
		root.Remove(SocketFile)
	}
}

// LogFile is the daemon's log in the session directory: what `daemon
// start` runs writes its output there.
const LogFile = "daemon.log"

// OpenLog opens the log of session directory dir for appending, making
// the directory (0700) if it is missing: the log is created exclusively
// or, if it is there, opened without following a link and only if it is
// a regular file of the user running jitprof.
func OpenLog(dir string) (*os.File, error) {
	root, err := trust.OpenOwnDir(dir, true)
	if err != nil {
		return nil, fmt.Errorf("session directory: %w", err)
	}
	defer root.Close()
	f, err := root.OpenFile(LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if !errors.Is(err, fs.ErrExist) {
		return f, err
	}
	f, err = trust.OpenEntry(root, LogFile, os.O_WRONLY|os.O_APPEND|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, LogFile), err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() || st.Nlink != 1 {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file of the user running jitprof", filepath.Join(dir, LogFile))
	}
	return f, nil
}
