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

// OpenOwnDir opens path, a directory jitprof keeps files of its own in
// (the daemon's session directory), as an os.Root, creating it and the
// directories missing above it (mode 0700) when create. It is refused
// unless:
//
//   - no component of the path is a symlink (none is followed: give the
//     real path);
//   - it belongs to the user running jitprof;
//   - no other user can write it or any directory above it: each is
//     owned by root or by the user running jitprof, and not writable by
//     others, nor, when jitprof runs as root, by its group (OpenSSH's
//     rule for a key's directory). A directory above that is root's and
//     sticky (/tmp) is accepted: in it no other user can rename or
//     remove what is not theirs.
//
// Every directory is checked on the descriptor the walk opened, and the
// Root is that very directory, so a rename meanwhile cannot swap
// another in. Refusals wrap ErrUntrusted.
func OpenOwnDir(path string, create bool) (*os.Root, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer func() { unix.Close(fd) }()
	parts := strings.FieldsFunc(abs, func(r rune) bool { return r == '/' })
	at := "/"
	for i := 0; ; i++ {
		last := i == len(parts)
		if err := checkDir(fd, at, last); err != nil {
			return nil, err
		}
		if last {
			break
		}
		at = filepath.Join(at, parts[i])
		next, err := openDirAt(fd, parts[i], at, create)
		if err != nil {
			return nil, err
		}
		unix.Close(fd)
		fd = next
	}
	root, err := os.OpenRoot(linux.FDPath(fd))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return root, nil
}

// openDirAt opens the directory name in dirfd with O_PATH, following no
// symlink, creating it (0700) if missing and create.
func openDirAt(dirfd int, name, shown string, create bool) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			err = unix.Mkdirat(dirfd, name, 0o700)
			if err == nil || errors.Is(err, unix.EEXIST) {
				continue
			}
		}
		if err != nil {
			return -1, fmt.Errorf("%s: %w", shown, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("%s: %w", shown, err)
		}
		if t := st.Mode & unix.S_IFMT; t != unix.S_IFDIR {
			unix.Close(fd)
			if t == unix.S_IFLNK {
				return -1, refuse(shown, "a symlink (never followed: give the real path)", false)
			}
			return -1, refuse(shown, "not a directory ("+TypeName(t)+")", false)
		}
		return fd, nil
	}
}

// checkDir applies OpenOwnDir's rule to the directory fd: the one asked
// for when last, else one above it.
func checkDir(fd int, shown string, last bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	me := uint32(os.Geteuid())
	if last && st.Uid != me {
		return refuse(shown, fmt.Sprintf("owned by uid %d, not by the user running jitprof (uid %d)", st.Uid, me), false)
	}
	if st.Uid != 0 && st.Uid != me {
		return refuse(shown, fmt.Sprintf("a directory above it is owned by uid %d, who could replace what is below", st.Uid), false)
	}
	writable := uint32(0o002)
	if me == 0 {
		writable |= 0o020
	}
	if st.Mode&writable != 0 && (last || st.Mode&unix.S_ISVTX == 0 || st.Uid != 0) {
		what := "others"
		if st.Mode&0o002 == 0 {
			what = "its group"
		}
		return refuse(shown, fmt.Sprintf("writable by %s (mode %#o), who could put links or files in it", what, st.Mode&0o7777), false)
	}
	return nil
}

// OpenEntry opens name, one entry of the directory root (no "/"), with
// open(2)'s flag and perm, never through a symlink: name is opened
// O_NOFOLLOW on the directory's descriptor, where os.Root follows a
// link that stays inside the directory.
func OpenEntry(root *os.Root, name string, flag int, perm uint32) (*os.File, error) {
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%s: not one directory entry", name)
	}
	d, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	fd, err := unix.Openat(int(d.Fd()), name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, refuse(name, "a symlink (never followed)", false)
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}
