package jitlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/trust"
)

// ErrUnsafe reports a file or directory that is not safe to trust: wrong
// owner, a symlink, too permissive, or too large. It is the one error of
// jitprof's trust policy (docs/security.md), whatever reads the file.
var ErrUnsafe = trust.ErrUntrusted

// DefaultReadLimit bounds the files readers accept unless told otherwise:
// the one limit jitprof applies to every JIT data file it reads.
const DefaultReadLimit = trust.MaxSize

// ReadOptions say which files a reader trusts: jitprof's policy for files
// another user can write (internal/trust, docs/security.md). The zero
// value trusts files owned by the caller, up to DefaultReadLimit bytes,
// reached without following any symlink.
type ReadOptions struct {
	// Owner is the uid the file must belong to, the uid of the process
	// that wrote it; 0 means the caller's effective uid. Root's files are
	// not accepted for another owner: a root profiler reading a user's
	// JIT passes that process's uid.
	Owner int
	// Limit is the largest file accepted; 0 means DefaultReadLimit, and
	// a larger value means it too.
	Limit int64
	// Force reads a file of another owner, with more than one link, or
	// over the limit; it never follows a symlink or opens anything but a
	// regular file.
	Force bool
}

func (o *ReadOptions) rule() trust.Rule {
	r := trust.Rule{Owner: trust.UnknownOwner}
	if o != nil {
		if o.Owner != 0 {
			r.Owner = o.Owner
		}
		r.Limit, r.Force = o.Limit, o.Force
	}
	return r
}

// openChecked opens path for reading after the checks in opts.
func openChecked(path string, opts *ReadOptions) (*trust.File, error) {
	f, err := trust.Open(path, opts.rule())
	if err != nil {
		return nil, fmt.Errorf("jitlog: %w", err)
	}
	return f, nil
}

// ensureDir creates dir 0700 if it is missing and checks that it is a real
// directory of ours that no one else can write: on a shared machine another
// user could otherwise plant files or symlinks where our JIT writes.
func ensureDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("jitlog: create %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("jitlog: %w", &fs.PathError{Op: "lstat", Path: dir, Err: err})
	}
	if err := checkDir(dir, &st, os.Geteuid()); err != nil {
		return fmt.Errorf("jitlog: %w", err)
	}
	return nil
}

// checkDir checks what the writers require of their directory: a real
// directory, owned by owner, that no one else can write.
func checkDir(dir string, st *unix.Stat_t, owner int) error {
	refuse := func(reason string) error {
		return fmt.Errorf("refusing directory %s: %s: %w", dir, reason, ErrUnsafe)
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return refuse("is a symlink")
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return refuse("not a directory")
	case int(st.Uid) != owner:
		return refuse(fmt.Sprintf("owned by uid %d, not %d", st.Uid, owner))
	case st.Mode&0o022 != 0:
		return refuse(fmt.Sprintf("mode %#o is writable by others; chmod 700 it", st.Mode&0o777))
	}
	return nil
}

// ProcessAlive reports whether the process that wrote header h still runs:
// its pid exists with the start time h recorded, and is not a zombie (a
// zombie has written its last record).
func ProcessAlive(h *Header) bool {
	start, state, err := linux.Host.Stat(int(h.PID))
	return err == nil && start == h.StartTime && state != 'Z'
}

// ProcessOwner returns the uid of running process pid, the owner its
// database must have (ReadOptions.Owner), and false when no process pid
// runs.
func ProcessOwner(pid int) (int, bool) {
	id, err := linux.Host.Identity(pid)
	if err != nil {
		return 0, false
	}
	return id.UID, true
}
