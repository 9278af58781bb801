package anon

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// MaxFileSize bounds the JIT data files handlers read: far above what a
// real JIT writes in a profiling session, low enough that a hostile or
// runaway file cannot exhaust the report's memory.
const MaxFileSize = 1 << 30

// ErrUntrusted is returned for a JIT data file the trust checks refuse.
var ErrUntrusted = errors.New("untrusted JIT data file")

// openTrusted opens path for reading on behalf of p. A report, often run
// as root, reads files in world-writable places such as /tmp that any user
// could have planted for someone else's pid, so unless p.Force is set it
// refuses a symlink (O_NOFOLLOW, atomically), anything but a regular file,
// a file larger than MaxFileSize, and a file owned by anyone but p.UID,
// root or the user running the report. The checks use fstat on the opened
// descriptor, so the file checked is the file read. A missing file gives
// an error wrapping fs.ErrNotExist.
func openTrusted(p *Process, path string) (*os.File, int64, error) {
	// O_NONBLOCK keeps a FIFO planted at path from hanging the open.
	flags := os.O_RDONLY | syscall.O_CLOEXEC | syscall.O_NONBLOCK
	if !p.Force {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, 0, refuse(path, "is a symlink")
		}
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if p.Force {
		return f, fi.Size(), nil
	}
	reason := ""
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		reason = fmt.Sprintf("not a regular file (%v)", fi.Mode().Type())
	case st == nil:
		reason = "owner unknown"
	case int(st.Uid) != p.UID && st.Uid != 0 && int(st.Uid) != os.Geteuid():
		reason = fmt.Sprintf("owned by uid %d, not by the process's uid %d or root", st.Uid, p.UID)
	case fi.Size() > MaxFileSize:
		reason = fmt.Sprintf("%d bytes, over the limit of %d", fi.Size(), MaxFileSize)
	}
	if reason != "" {
		f.Close()
		return nil, 0, refuse(path, reason)
	}
	return f, fi.Size(), nil
}

func refuse(path, reason string) error {
	return fmt.Errorf("refusing %s: %s (--force overrides): %w", path, reason, ErrUntrusted)
}
