package anon

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/trust"
)

// A handler is code that reads what a recorded process wrote, and
// jitprof often runs as root. So when jitprof runs as root, a handler
// (an external executable, or the host of a handler library) runs as the
// user and group the process ran as, with no supplementary groups, no
// capabilities and no_new_privs: what it can read, run or signal is what
// that process could, and nothing it executes can give it more.
//
// The credentials change in the child between fork and exec (Go's
// SysProcAttr.Credential: setgroups, setgid, setuid), which leaves it no
// capabilities when the user is not root. Two things Go cannot do there
// are done to the thread that forks instead, whose state the child
// inherits: no_new_privs, and an empty capability bounding set with no
// inheritable or ambient capabilities, so that even a handler run as
// root (for root's processes) executes with no capabilities. That
// thread is locked to one goroutine that only starts handlers: Go makes
// its other threads from a clean template thread, never from a locked
// one, so the rest of jitprof keeps its rights.

// handlerCred is whom a handler asked about p runs as when jitprof runs
// as root: p's user and group as recorded, nobody's group for a user
// whose group is not known, and nobody for a process whose user is not
// known (a perf recording of a process that has exited).
func handlerCred(p *Process) trust.Cred {
	if p.UID < 0 {
		return trust.Nobody
	}
	gid := p.GID
	if gid < 0 {
		gid = trust.Nobody.GID
	}
	return trust.Cred{UID: p.UID, GID: gid}
}

// launcher is the thread that starts handlers.
var launcher struct {
	once sync.Once
	reqs chan launch
	err  error // why the thread could not give up what it had to
}

type launch struct {
	cmd  *exec.Cmd
	done chan error
}

// startAs starts cmd as c, unprivileged, when jitprof runs as root;
// otherwise it starts cmd as jitprof's user, which it cannot change.
func startAs(cmd *exec.Cmd, c trust.Cred) error {
	if os.Geteuid() != 0 {
		return cmd.Start()
	}
	launcher.once.Do(startLauncher)
	if launcher.err != nil {
		return fmt.Errorf("starting a handler without privileges: %w", launcher.err)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(c.UID), Gid: uint32(c.GID), Groups: []uint32{}}
	l := launch{cmd, make(chan error, 1)}
	launcher.reqs <- l
	return <-l.done
}

func startLauncher() {
	launcher.reqs = make(chan launch)
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		// Never unlocked: the thread must not go back to the runtime
		// without its privileges.
		launcher.err = confine()
		close(ready)
		for l := range launcher.reqs {
			if launcher.err != nil {
				l.done <- launcher.err
				continue
			}
			l.done <- l.cmd.Start()
		}
	}()
	<-ready
}

// confine sets no_new_privs on this thread and empties its capability
// bounding set and its inheritable and ambient capabilities; its
// permitted and effective ones stay, to change a child's credentials.
func confine() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	last, err := linux.CapLastCap()
	if err != nil {
		return err
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	// Ambient capabilities came with Linux 4.3; before, there are none.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clearing inheritable capabilities: %w", err)
	}
	return nil
}
