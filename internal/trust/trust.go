package trust

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
)

// MaxSize bounds the files jitprof reads for JIT data: far above what a
// JIT writes in a profiling session (jitlog's databases stop at 1 GiB by
// default), low enough that a hostile file cannot exhaust memory.
const MaxSize = 1 << 30

// ErrUntrusted is wrapped by every refusal.
var ErrUntrusted = errors.New("untrusted file")

// UnknownOwner is the Owner of a file whose process's uid is not known:
// the file must then belong to the user jitprof runs as.
const UnknownOwner = -1

// Rule says which file a reader accepts.
type Rule struct {
	// Owner is the uid the file must belong to: the uid of the process
	// whose data it is, as recorded; UnknownOwner means the caller's
	// effective uid.
	Owner int
	// Limit is the largest size accepted; 0 (or more than MaxSize) means
	// MaxSize.
	Limit int64
	// Force accepts a file of another owner, with more than one link or
	// over the limit (never a symlink or anything but a regular file).
	Force bool
}

func (r Rule) owner() int {
	if r.Owner == UnknownOwner {
		return os.Geteuid()
	}
	return r.Owner
}

// limit is the size limit in force.
func (r Rule) limit() int64 {
	if r.Limit <= 0 || r.Limit > MaxSize {
		return MaxSize
	}
	return r.Limit
}

// File is an open file that passed the checks.
type File struct {
	*os.File
	// Size is the size the checks saw.
	Size int64
	// Owner is the file's owner and group.
	Owner Cred
}

// OpenOwnCache opens one of jitprof's own cache files (the kernel's
// symbols, images' unwind tables): the checks of Open for the caller's
// own file of at most limit bytes, and no write permission for group or
// others, since a cache another user could change would be their word.
func OpenOwnCache(path string, limit int64) (*File, error) {
	f, err := Open(path, Rule{Owner: UnknownOwner, Limit: limit})
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && st.Mode().Perm()&0o022 != 0 {
		err = fmt.Errorf("%s: writable by others", path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Open opens path, a path in jitprof's own mount namespace, for reading
// after the checks of r. No symlink in the path is followed, "/" and
// the directories above the file included.
func Open(path string, r Rule) (*File, error) {
	return open(unix.AT_FDCWD, path, path, false, r)
}

// OpenIn opens path as a process whose root directory is root sees it:
// root is typically /proc/PID/root, and path ("/tmp/perf-PID.map") is
// resolved inside it, as if root were "/", without following any symlink
// below root. Messages name the file as root joined with path.
func OpenIn(root, path string, r Rule) (*File, error) {
	shown := filepath.Join(root, path)
	dirfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(dirfd)
	return open(dirfd, path, shown, true, r)
}

// OpenInDir opens name, an entry of the open directory dir, after the
// checks of r; name is resolved inside dir, so it cannot name anything
// outside it.
func OpenInDir(dir *os.File, name string, r Rule) (*File, error) {
	return open(int(dir.Fd()), name, filepath.Join(dir.Name(), name), true, r)
}

// OpenDir opens the directory path for reading its entries, following no
// symlink in the path. It checks nothing else: who may own a directory
// is the caller's rule.
func OpenDir(path string) (*os.File, error) {
	pfd, err := openPath(unix.AT_FDCWD, path, false)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, errSymlink) {
			return nil, refuse(path, "a symlink in its path (never followed)", false)
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(pfd)
	fd, err := unix.Open(linux.FDPath(pfd), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) {
			return nil, refuse(path, "not a directory", false)
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// CheckSize checks that a file at path that has grown to size (a database
// followed while its JIT writes) is still within r's limit.
func (r Rule) CheckSize(path string, size int64) error {
	if !r.Force && size > r.limit() {
		return refuse(path, fmt.Sprintf("grew to %d bytes, over the limit of %d", size, r.limit()), true)
	}
	return nil
}

// openat2 is whether to try openat2 first; tests clear it to exercise the
// fall-back that kernels before 5.6 get.
var openat2 = true

// open opens path below dirfd: O_PATH without following links, then the
// checks on fstat, then a reopen for reading through /proc/self/fd, which
// opens the very inode that was checked.
func open(dirfd int, path, shown string, inRoot bool, r Rule) (*File, error) {
	return openChecked(dirfd, path, shown, inRoot, func(st *unix.Stat_t) error { return check(st, shown, r) })
}

// openChecked is open with the checks of ok.
func openChecked(dirfd int, path, shown string, inRoot bool, ok func(*unix.Stat_t) error) (*File, error) {
	pfd, err := openPath(dirfd, path, inRoot)
	if err != nil {
		switch {
		case errors.Is(err, unix.ELOOP):
			return nil, refuse(shown, "a symlink in its path (never followed)", false)
		case errors.Is(err, unix.EXDEV):
			return nil, refuse(shown, "its path leaves the process's root", false)
		case errors.Is(err, errDotDot):
			return nil, refuse(shown, "\"..\" in its path", false)
		case errors.Is(err, errSymlink):
			return nil, refuse(shown, "a symlink in its path (never followed)", false)
		}
		return nil, &fs.PathError{Op: "open", Path: shown, Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: shown, Err: err}
	}
	if err := ok(&st); err != nil {
		return nil, err
	}
	fd, err := unix.Open(linux.FDPath(pfd), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: shown, Err: err}
	}
	var st2 unix.Stat_t
	if err := unix.Fstat(fd, &st2); err != nil || st2.Dev != st.Dev || st2.Ino != st.Ino {
		unix.Close(fd)
		return nil, refuse(shown, "changed while it was opened", false)
	}
	return &File{File: os.NewFile(uintptr(fd), shown), Size: st2.Size, Owner: CredOf(&st2)}, nil
}

// OpenCode opens path, code jitprof is to run in a process of its own (an
// anon handler library, its host), after the checks for code: a regular
// file reached without following a symlink, owned by root or by the user
// running jitprof, and writable by no one else (no group or other write
// bit), so that no other user can have put or changed it.
func OpenCode(path string) (*File, error) {
	return openChecked(unix.AT_FDCWD, path, path, false, func(st *unix.Stat_t) error {
		if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG {
			return refuse(path, "not a regular file ("+TypeName(t)+")", false)
		}
		if st.Uid != 0 && int64(st.Uid) != int64(os.Getuid()) {
			return refuse(path, fmt.Sprintf("owned by uid %d, neither root nor the user running jitprof (uid %d)", st.Uid, os.Getuid()), false)
		}
		if st.Mode&0o022 != 0 {
			return refuse(path, fmt.Sprintf("writable by its group or by others (mode %#o)", st.Mode&0o777), false)
		}
		return nil
	})
}

// check applies r to what fstat said of the file at shown.
func check(st *unix.Stat_t, shown string, r Rule) error {
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG {
		return refuse(shown, "not a regular file ("+TypeName(t)+")", false)
	}
	if r.Force {
		return nil
	}
	if want := r.owner(); int64(st.Uid) != int64(want) {
		whose := "the process's user"
		if r.Owner == UnknownOwner {
			whose = "the user running jitprof, since the process's user is unknown"
		}
		return refuse(shown, fmt.Sprintf("owned by uid %d, not by uid %d, %s", st.Uid, want, whose), true)
	}
	if st.Nlink != 1 {
		return refuse(shown, fmt.Sprintf("%d hard links, where a JIT's file has one", st.Nlink), true)
	}
	if st.Size > r.limit() {
		return refuse(shown, fmt.Sprintf("%d bytes, over the limit of %d", st.Size, r.limit()), true)
	}
	return nil
}

// TypeName names a file type of stat's mode (unix.S_IFMT bits) for a
// message: "a directory", "a FIFO".
func TypeName(t uint32) string {
	switch t {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symlink"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	}
	return fmt.Sprintf("type %#o", t)
}

func refuse(path, reason string, forcible bool) error {
	if forcible {
		reason += "; --force reads it"
	}
	return fmt.Errorf("refusing %s: %s: %w", path, reason, ErrUntrusted)
}

var (
	errDotDot  = errors.New("\"..\" in a path")
	errSymlink = errors.New("symlink")
)

// openPath opens path below dirfd with O_PATH, following no symlink; in
// a root, absolute paths and ".." stay inside it.
func openPath(dirfd int, path string, inRoot bool) (int, error) {
	if openat2 {
		resolve := uint64(unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS)
		if inRoot {
			resolve |= unix.RESOLVE_IN_ROOT
		}
		fd, err := unix.Openat2(dirfd, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolve})
		// Kernels before 5.6 lack openat2; some seccomp filters refuse
		// it with EPERM.
		if err != unix.ENOSYS && err != unix.EPERM {
			return fd, err
		}
	}
	return walk(dirfd, path, inRoot)
}

// walk opens path one component at a time with O_PATH|O_NOFOLLOW,
// refusing any symlink, and, in a root, any "..".
func walk(dirfd int, path string, inRoot bool) (int, error) {
	start := "."
	if strings.HasPrefix(path, "/") && !inRoot {
		start = "/"
	}
	fd, err := unix.Openat(dirfd, start, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	parts := strings.FieldsFunc(path, func(r rune) bool { return r == '/' })
	for i, part := range parts {
		if part == "." {
			continue
		}
		if part == ".." && inRoot {
			unix.Close(fd)
			return -1, errDotDot
		}
		next, err := unix.Openat(fd, part, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, err
		}
		t := st.Mode & unix.S_IFMT
		if t == unix.S_IFLNK {
			unix.Close(fd)
			return -1, errSymlink
		}
		if i < len(parts)-1 && t != unix.S_IFDIR {
			unix.Close(fd)
			return -1, unix.ENOTDIR
		}
	}
	return fd, nil
}
