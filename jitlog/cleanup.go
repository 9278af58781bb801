package jitlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/trust"
)

// Cleanup removes the databases in dir whose process is gone, and returns
// the paths it removed.
//
// It checks dir as the writers do (a real directory, not a symlink, that
// no one but its owner can write), reached without following any symlink,
// owned by the caller, or by anyone when the caller is root: root may
// clean up after a user, whose directory it then is.
//
// It removes only real databases: a regular file named anon.PID, owned by
// the directory's owner, with one link, whose header says it was written
// by that PID, and whose process is gone: PID no longer exists, is a
// zombie, or belongs to a process started at another time than the
// header's. Anything else (a file that is not a database, one whose header
// names another pid, a database a writer is still creating, a symlink) is
// left alone.
func Cleanup(dir string) ([]string, error) {
	d, err := trust.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("jitlog: cleanup: %w", err)
	}
	defer d.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(d.Fd()), &st); err != nil {
		return nil, fmt.Errorf("jitlog: cleanup: %s: %w", dir, err)
	}
	owner := os.Geteuid()
	if owner == 0 {
		owner = int(st.Uid)
	}
	if err := checkDir(dir, &st, owner); err != nil {
		return nil, fmt.Errorf("jitlog: cleanup: %w", err)
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("jitlog: cleanup: %s: %w", dir, err)
	}
	var removed []string
	var errs []error
	for _, name := range names {
		pid, ok := databasePID(name)
		if !ok {
			continue
		}
		gone, err := deadDatabase(d, name, pid, owner)
		if err != nil {
			errs = append(errs, fmt.Errorf("jitlog: cleanup: %w", err))
			continue
		}
		if gone {
			removed = append(removed, filepath.Join(dir, name))
		}
	}
	return removed, errors.Join(errs...)
}

// databasePID returns the pid of a database's file name, anon.PID in
// decimal without sign or leading zeros.
func databasePID(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "anon.")
	if !ok || s == "" || s[0] == '0' || len(s) > 10 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	pid, err := strconv.Atoi(s)
	return pid, err == nil && pid <= 1<<22 // PID_MAX_LIMIT
}

// deadDatabase removes name from d when it is the database of process pid
// and that process is gone, and reports whether it did. Files that are
// not such a database are no error: they are left alone.
func deadDatabase(d *os.File, name string, pid, owner int) (bool, error) {
	f, err := trust.OpenInDir(d, name, trust.Rule{Owner: owner})
	if err != nil {
		// Refused (not ours, a symlink, a FIFO, ...) or gone meanwhile.
		return false, nil
	}
	defer f.Close()
	r, err := NewReader(io.NewSectionReader(f, 0, f.Size), f.Size)
	if err != nil {
		return false, nil // not a database, or one still being created
	}
	h := r.Header()
	if int(h.PID) != pid || ProcessAlive(h) {
		return false, nil
	}
	// Remove the file checked, not one put in its place meanwhile (only
	// the directory's owner could, but the check is cheap).
	var opened, now unix.Stat_t
	if unix.Fstat(int(f.Fd()), &opened) != nil ||
		unix.Fstatat(int(d.Fd()), name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		opened.Dev != now.Dev || opened.Ino != now.Ino {
		return false, nil
	}
	if err := unix.Unlinkat(int(d.Fd()), name, 0); err != nil && err != unix.ENOENT {
		return false, fmt.Errorf("remove %s: %w", filepath.Join(d.Name(), name), err)
	}
	return true, nil
}
