package outfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/jitprof/jitprof/internal/trust"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrRefused is wrapped by the refusal of an output path that names a
// symlink or something other than a regular file.
var ErrRefused = errors.New("an output is only ever a regular file")

// File is an output being written: a temporary beside its path until
// Replace or Close puts it there.
type File struct {
	*os.File
	path string // as the user gave it, for messages
	dir  int    // O_PATH descriptor of its directory
	name string // its name in dir
	tmp  string // the temporary's name in dir; "" once in place
	done bool   // closed, or aborted
}

// Create starts an output to be put at path, created with perm (less
// the umask) as a temporary in path's directory. It refuses a path that
// names a symlink (never followed), a FIFO, a device, a socket or a
// directory.
func Create(path string, perm os.FileMode) (*File, error) {
	dirPath, name := filepath.Split(path)
	if name == "" || name == "." || name == ".." {
		return nil, fmt.Errorf("%s: not a file name", path)
	}
	if dirPath == "" {
		dirPath = "."
	}
	// The directories on the way are the user's choice, as for any
	// command; the last name is where another user can plant something.
	dir, err := unix.Open(dirPath, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dirPath, Err: err}
	}
	f := &File{path: path, dir: dir, name: name}
	if err := f.check(); err != nil {
		unix.Close(dir)
		return nil, err
	}
	if err := f.createTemp(perm); err != nil {
		unix.Close(dir)
		return nil, err
	}
	return f, nil
}

// check refuses a path that names something other than a regular file.
func (f *File) check() error {
	var st unix.Stat_t
	err := unix.Fstatat(f.dir, f.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "stat", Path: f.path, Err: err}
	}
	switch t := st.Mode & unix.S_IFMT; t {
	case unix.S_IFREG:
		return nil
	case unix.S_IFLNK:
		return fmt.Errorf("refusing to write %s: a symlink, never followed (give the file it names, or - for standard output): %w", f.path, ErrRefused)
	default:
		return fmt.Errorf("refusing to write %s: %s (- writes to standard output): %w", f.path, trust.TypeName(t), ErrRefused)
	}
}

// tempTries bounds the names tried for the temporary: another user who
// can write the directory can take names, never the one created.
const tempTries = 100

// createTemp creates the temporary, a new file that no name planted in
// the directory can redirect: O_EXCL fails on any name that exists,
// symlinks included.
func (f *File) createTemp(perm os.FileMode) error {
	base := f.name
	if len(base) > 200 { // room for the suffix within NAME_MAX
		base = base[:200]
	}
	for range tempTries {
		var r [6]byte
		rand.Read(r[:])
		tmp := "." + base + "." + hex.EncodeToString(r[:]) + ".tmp"
		fd, err := unix.Openat(f.dir, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "create", Path: filepath.Join(filepath.Dir(f.path), tmp), Err: err}
		}
		f.File, f.tmp = os.NewFile(uintptr(fd), f.path), tmp
		return nil
	}
	return fmt.Errorf("%s: found no free name for a temporary in %d tries", f.path, tempTries)
}

// Replace puts the file at its path now, replacing whatever the path
// names without following it; writes may go on afterwards. With keepOld,
// a non-empty regular file at the path is first renamed PATH.old, as
// perf record keeps its previous output.
func (f *File) Replace(keepOld bool) error {
	if f.tmp == "" {
		return nil
	}
	if keepOld {
		var st unix.Stat_t
		err := unix.Fstatat(f.dir, f.name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size > 0 {
			// Whatever is at the path by now is moved, not opened: a
			// link swapped in becomes PATH.old, still a link.
			err = unix.Renameat(f.dir, f.name, f.dir, f.name+".old")
		}
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("keeping the previous %s as %s.old: %w", f.path, f.name, err)
		}
	}
	if err := unix.Renameat(f.dir, f.tmp, f.dir, f.name); err != nil {
		return &fs.PathError{Op: "rename", Path: f.path, Err: err}
	}
	f.tmp = ""
	return nil
}

// Close closes the file and, unless Replace did, puts it at its path. A
// file whose close fails is removed instead.
func (f *File) Close() error {
	if f.done {
		return nil
	}
	f.done = true
	defer unix.Close(f.dir)
	if err := f.File.Close(); err != nil {
		f.unlink(nil)
		return err
	}
	return f.Replace(false)
}

// Abort closes the file and removes it: the temporary, or the file at
// its path if Replace put it there and it is still there.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	defer unix.Close(f.dir)
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		st = unix.Stat_t{}
	}
	f.File.Close()
	f.unlink(&st)
}

// unlink removes the temporary, or, given what fstat said of the file,
// the name at the path if it still names the file.
func (f *File) unlink(st *unix.Stat_t) {
	if f.tmp != "" {
		unix.Unlinkat(f.dir, f.tmp, 0)
		return
	}
	var now unix.Stat_t
	if st != nil && st.Ino != 0 && unix.Fstatat(f.dir, f.name, &now, unix.AT_SYMLINK_NOFOLLOW) == nil &&
		now.Dev == st.Dev && now.Ino == st.Ino {
		unix.Unlinkat(f.dir, f.name, 0)
	}
}
