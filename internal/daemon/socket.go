package daemon

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
)

// The control socket is made with golang.org/x/sys/unix rather than the
// net package: importing net links runtime/cgo (for its DNS resolver)
// into the binary, which costs every jitprof command about 3 ms of
// start-up. Its descriptors are non-blocking and wrapped in an os.File,
// so that reads, writes, accepts and connects wait in the runtime's
// poller, and deadlines and Close work on them as on a net.Conn.

// listener is a listening unix socket; Close wakes a pending accept and
// removes the socket file (what net.UnixListener.SetUnlinkOnClose did).
type listener struct {
	f    *os.File
	dir  *os.File // the session directory the socket is in
	path string   // as messages name it
}

// sockaddr is path's unix socket address, or an error naming path if it
// is too long for sockaddr_un.
func sockaddr(path string) (*unix.SockaddrUnix, error) {
	// sun_path holds the path and its NUL.
	if limit := len(unix.RawSockaddrUnix{}.Path) - 1; len(path) > limit {
		return nil, fmt.Errorf("control socket %s: path too long for a unix socket (%d bytes, at most %d)", path, len(path), limit)
	}
	return &unix.SockaddrUnix{Name: path}, nil
}

// inDir is the address of the socket name in the open directory dir:
// through /proc/self/fd, so that bind and connect resolve nothing but
// the last component, in the very directory that was checked, and the
// session directory's path may be longer than sun_path.
func inDir(dir *os.File, name string) string {
	return linux.FDPath(int(dir.Fd())) + "/" + name
}

func socket(path string) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("control socket %s: %w", path, os.NewSyscallError("socket", err))
	}
	return fd, nil
}

// listen makes the control socket in the session directory root,
// readable and writable by the daemon's user only (the umask is
// tightened around its creation: a chmod after bind would leave a moment
// in which anyone could connect). bind creates it exclusively: it fails
// on anything, a link included, already at its name.
func listen(root *os.Root, shown string) (*listener, error) {
	path := filepath.Join(shown, SocketFile)
	dir, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	// A socket left by a killed daemon: the session lock, which this
	// process holds, says no other daemon uses it.
	if fi, err := root.Lstat(SocketFile); err == nil && fi.Mode()&fs.ModeSocket != 0 {
		root.Remove(SocketFile)
	}
	sa, err := sockaddr(inDir(dir, SocketFile))
	if err != nil {
		dir.Close()
		return nil, err
	}
	fd, err := socket(path)
	if err != nil {
		dir.Close()
		return nil, err
	}
	old := unix.Umask(0o077)
	err = unix.Bind(fd, sa)
	unix.Umask(old)
	if err != nil {
		unix.Close(fd)
		dir.Close()
		return nil, fmt.Errorf("control socket %s: %w", path, os.NewSyscallError("bind", err))
	}
	ln := &listener{f: os.NewFile(uintptr(fd), path), dir: dir, path: path}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket %s: %w", path, os.NewSyscallError("listen", err))
	}
	// The umask made it 0700; a socket needs no x.
	if err := unix.Fchmodat(int(dir.Fd()), SocketFile, 0o600, unix.AT_SYMLINK_NOFOLLOW); err != nil && err != unix.EOPNOTSUPP {
		ln.Close()
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	return ln, nil
}

// accept waits for a connection; it fails once ln is closed.
func (ln *listener) accept() (*os.File, error) {
	rc, err := ln.f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var nfd int
	var aerr error
	err = rc.Read(func(fd uintptr) bool {
		for {
			nfd, _, aerr = unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			// ECONNABORTED: a client gave up while queued.
			if aerr != unix.EINTR && aerr != unix.ECONNABORTED {
				return aerr != unix.EAGAIN // EAGAIN: wait in the poller
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", ln.path, err)
	}
	if aerr != nil {
		return nil, fmt.Errorf("control socket %s: %w", ln.path, os.NewSyscallError("accept4", aerr))
	}
	return os.NewFile(uintptr(nfd), ln.path), nil
}

// Close stops listening and removes the socket file; only the first
// Close removes it.
func (ln *listener) Close() error {
	if err := ln.f.Close(); err != nil {
		return err
	}
	defer ln.dir.Close()
	if err := unix.Unlinkat(int(ln.dir.Fd()), SocketFile, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: ln.path, Err: err}
	}
	return nil
}

// dial connects to the unix socket at addr, which messages call path. A
// missing socket file gives an error that is fs.ErrNotExist, a socket no
// one listens on one that is ECONNREFUSED. A unix socket connects at
// once or fails, never "in progress" (EAGAIN when the listener's backlog
// is full, as with net.Dial).
func dial(addr, path string) (*os.File, error) {
	sa, err := sockaddr(addr)
	if err != nil {
		return nil, err
	}
	fd, err := socket(path)
	if err != nil {
		return nil, err
	}
	if err := unix.Connect(fd, sa); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("control socket %s: %w", path, os.NewSyscallError("connect", err))
	}
	return os.NewFile(uintptr(fd), path), nil
}
