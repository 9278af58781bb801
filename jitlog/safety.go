package jitlog

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// DefaultReadLimit bounds the files readers accept unless told otherwise.
const DefaultReadLimit = 2 << 30

// ReadOptions say which files a reader trusts. The zero value trusts files
// owned by the caller or root, up to DefaultReadLimit bytes, never through a
// symlink.
type ReadOptions struct {
	// Owner is the uid the file must belong to (root is always accepted);
	// 0 means the caller's effective uid. A root profiler reading another
	// user's JIT passes that process's uid.
	Owner int
	// Limit is the largest file accepted; 0 means DefaultReadLimit.
	Limit int64
	// Force reads a file that fails these checks.
	Force bool
}

func (o *ReadOptions) owner() int {
	if o == nil || o.Owner == 0 {
		return os.Geteuid()
	}
	return o.Owner
}

func (o *ReadOptions) limit() int64 {
	if o == nil || o.Limit <= 0 {
		return DefaultReadLimit
	}
	return o.Limit
}

// openChecked opens path for reading after the checks in opts, and returns
// its size.
func openChecked(path string, opts *ReadOptions) (*os.File, int64, error) {
	force := opts != nil && opts.Force
	flags := os.O_RDONLY | syscall.O_CLOEXEC
	if !force {
		// O_NOFOLLOW refuses a symlink in the last component atomically;
		// O_NONBLOCK keeps a FIFO planted there from hanging us.
		flags |= syscall.O_NOFOLLOW | syscall.O_NONBLOCK
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, 0, fmt.Errorf("jitlog: refusing %s: is a symlink: %w", path, ErrUnsafe)
		}
		return nil, 0, fmt.Errorf("jitlog: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("jitlog: %w", err)
	}
	if force {
		return f, fi.Size(), nil
	}
	reason := ""
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		reason = "not a regular file"
	case st == nil:
		reason = "owner unknown"
	case int(st.Uid) != opts.owner() && st.Uid != 0:
		reason = fmt.Sprintf("owned by uid %d, not %d or root", st.Uid, opts.owner())
	case fi.Size() > opts.limit():
		reason = fmt.Sprintf("%d bytes, over the limit of %d", fi.Size(), opts.limit())
	}
	if reason != "" {
		f.Close()
		return nil, 0, fmt.Errorf("jitlog: refusing %s: %s (ReadOptions.Force overrides): %w", path, reason, ErrUnsafe)
	}
	return f, fi.Size(), nil
}

// ensureDir creates dir 0700 if it is missing and checks that it is a real
// directory of ours that no one else can write: on a shared machine another
// user could otherwise plant files or symlinks where our JIT writes.
func ensureDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("jitlog: create %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("jitlog: %w", err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("jitlog: refusing directory %s: is a symlink: %w", dir, ErrUnsafe)
	case !fi.IsDir():
		return fmt.Errorf("jitlog: refusing directory %s: not a directory: %w", dir, ErrUnsafe)
	case st == nil || int(st.Uid) != os.Geteuid():
		return fmt.Errorf("jitlog: refusing directory %s: not owned by uid %d: %w", dir, os.Geteuid(), ErrUnsafe)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("jitlog: refusing directory %s: mode %v is writable by others; chmod 700 it: %w", dir, fi.Mode().Perm(), ErrUnsafe)
	}
	return nil
}

// procStat reads field 3 (state) and field 22 (start time, in clock ticks
// since boot) of /proc/PID/stat; the start time tells a process from a
// later one that reused its pid.
func procStat(pid int) (start uint64, state byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) may hold spaces and parentheses; fields
	// after it start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3, so field 22 is f[19].
	if len(f) < 20 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	start, err = strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	return start, f[0][0], nil
}

// ProcessAlive reports whether the process that wrote header h still runs:
// its pid exists with the start time h recorded, and is not a zombie (a
// zombie has written its last record).
func ProcessAlive(h *Header) bool {
	start, state, err := procStat(int(h.PID))
	return err == nil && start == h.StartTime && state != 'Z'
}
