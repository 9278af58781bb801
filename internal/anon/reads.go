package anon

import (
	"errors"
	"io/fs"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// Reads is what the handlers looked for of one process's JIT data when
// they claimed it, recorded by findData when Process.Reads is set: each
// path tried, and the file found there or none. Looking again costs an
// open and a stat a path; reading again costs the whole data, which for
// a long-running JIT can be hundreds of megabytes (a perf map), and
// which jitprof top and the daemon's push would otherwise read again
// every interval. Unchanged says whether a claim made now would find
// the very files the last one read, unwritten since.
type Reads struct {
	files []readFile
	// unsure says a claim read what Unchanged cannot check: data the
	// caller handed in (Process.Embedded, which it may hand anew each
	// time), or a file the trust checks refused (no descriptor to stat).
	unsure bool
}

type readFile struct {
	path  string
	found bool
	id    fileID
	// tail, when not -1, is where the reading stopped at a word no
	// record had claimed (Reads.until): a writer that maps the file
	// (jitlog's) appends without moving its times, but it claims that
	// word first.
	tail int64
}

// fileID tells a file from another and from itself once written: its
// device and inode, its size, and its modification and change times (a
// write sets both; the change time cannot be set back, and it moves
// with the owner, mode and links too, which the trust checks read).
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime unix.Timespec
}

func statID(f *os.File) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileID{}, err
	}
	return fileID{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}, nil
}

// found records the file a path opened to, as the claim is about to
// read its first size bytes (what the trust checks saw): stat'd before
// the reading, and with the size read, so that what is written after
// the checks, even before this stat, is a change the next look sees.
func (r *Reads) found(path string, f *os.File, size int64) {
	if r == nil {
		return
	}
	id, err := statID(f)
	if err != nil {
		r.unsure = true
		return
	}
	id.size = size
	r.files = append(r.files, readFile{path: path, found: true, id: id, tail: -1})
}

// until says the reading of the file found at path stopped at off, at
// eight zero bytes, where the next record will be: its writer maps the
// file, and writes to a mapped file set no times, so Unchanged also
// looks there.
func (r *Reads) until(path string, off int64) {
	if r == nil || len(r.files) == 0 || r.files[len(r.files)-1].path != path {
		r.refused()
		return
	}
	r.files[len(r.files)-1].tail = off
}

// absent records a path with no file.
func (r *Reads) absent(path string) {
	if r != nil {
		r.files = append(r.files, readFile{path: path})
	}
}

// refused records data that Unchanged cannot check.
func (r *Reads) refused() {
	if r != nil {
		r.unsure = true
	}
}

// clone copies r, to be changed.
func (r *Reads) clone() *Reads {
	return &Reads{files: slices.Clone(r.files), unsure: r.unsure}
}

// unchangedBut is Unchanged for every path but the skip'th.
func (r *Reads) unchangedBut(p *Process, skip int) bool {
	for i, rf := range r.files {
		if i != skip && !rf.same(p) {
			return false
		}
	}
	return true
}

// Unchanged reports whether each path the claim tried, opened as the
// claim opened it (p is the process as claimed: its root, its user),
// holds the same file, unwritten, or still none. A claim of the same
// handlers then reads the same and claims the same. It does not say
// whether the process is the same one (a pid used again): callers check
// that. Zero Reads, or nil, are never unchanged.
func (r *Reads) Unchanged(p *Process) bool {
	if r == nil || r.unsure || len(r.files) == 0 {
		return false
	}
	for _, rf := range r.files {
		if !rf.same(p) {
			return false
		}
	}
	return true
}

// same reports whether rf's path holds the file found, unwritten, or
// still none.
func (rf *readFile) same(p *Process) bool {
	f, err := openTrusted(p, rf.path)
	if err != nil {
		return !rf.found && errors.Is(err, fs.ErrNotExist)
	}
	defer f.Close()
	return rf.found && rf.unchanged(f.File)
}

// unchanged reports whether f is the file found, unwritten.
func (rf *readFile) unchanged(f *os.File) bool {
	if id, err := statID(f); err != nil || id != rf.id {
		return false
	}
	if rf.tail < 0 || rf.tail+8 > rf.id.size {
		return true
	}
	var w [8]byte
	if n, err := f.ReadAt(w[:], rf.tail); n != len(w) || err != nil {
		return false
	}
	return w == [8]byte{}
}
