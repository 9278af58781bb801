package sampledb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrNoSpace is wrapped, beside the system's error, when a sample file
// cannot get the blocks it needs: a full disk or quota (ENOSPC, EDQUOT)
// or a file-size limit (EFBIG). Nothing was half-written; the caller
// keeps its counts and can try again.
var ErrNoSpace = errors.New("no space for sample file")

// ErrTableFull says a sample file holds as many keys as the format
// allows (2^31 - 1).
var ErrTableFull = errors.New("sample file table full")

// testHook, when set by a test, is called at the points of a write where
// a killed writer leaves the file in a different state.
var testHook func(point string)

func hook(point string) {
	if testHook != nil {
		testHook(point)
	}
}

// wfile is a sample file open for writing: a shared mapping of exactly
// the blocks the file has (so a store never needs a new block, and a full
// disk is an error from allocate, never a SIGBUS).
//
// Writes keep every published state valid (docs/sample-files.md): an
// insert writes the node and its next index, publishes it by storing
// used, then links it into its chain; growth allocates and maps the
// bigger file, builds the new chains where no reader looks yet, and
// publishes them by storing the capacity.
type wfile struct {
	f    *os.File
	name string
	mem  []byte
	t    table
	c, u uint64
	// space, if set, is the session's room, which growth takes from.
	space *space
}

// createFile creates a sample file with an empty table. It is built under
// a hidden name (mangled names never begin with a dot) and renamed into
// place, so a name always holds a whole file.
func createFile(root *os.Root, name string, h *Header) (_ *wfile, err error) {
	dir, base := path.Split(name)
	if dir != "" {
		if err := root.MkdirAll(dir, 0o700); err != nil {
			return nil, noSpace(name, err)
		}
	}
	tmp := dir + "." + base
	f, err := root.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, noSpace(name, err)
	}
	w := &wfile{f: f, name: name, c: minCapacity, u: 1}
	defer func() {
		if err != nil {
			w.close()
			root.Remove(tmp)
		}
	}()
	size := fileSize(minCapacity)
	if err := allocate(f, size); err != nil {
		return nil, noSpace(name, err)
	}
	if err := w.mmap(size); err != nil {
		return nil, err
	}
	defer faultGuard(&w.mem, &err)()
	if err := encodeHeader(w.mem[:headerSize], h, minCapacity); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	hook("create")
	if err := root.Rename(tmp, name); err != nil {
		return nil, err
	}
	return w, nil
}

// openFile opens an existing sample file for writing, checking it as a
// reader does. A node its last writer published but did not link (it was
// killed between the two stores) is linked now.
func openFile(root *os.Root, name string) (_ *wfile, h Header, err error) {
	f, err := root.OpenFile(name, os.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, h, err
	}
	w := &wfile{f: f, name: name}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, h, err
	}
	if !fi.Mode().IsRegular() || fi.Size() < headerSize {
		return nil, h, fmt.Errorf("%s: %w: not a sample file", name, ErrFormat)
	}
	if err := w.mmap(min(fi.Size(), maxFileSize)); err != nil {
		return nil, h, err
	}
	defer faultGuard(&w.mem, &err)()
	h, l, err := validate(w.t)
	if err != nil {
		return nil, h, fmt.Errorf("%s: %w", name, err)
	}
	w.c, w.u = l.capacity, l.used
	if l.unlinked {
		i := w.u - 1
		k1, k2, _ := w.t.node(i)
		bucket := bucketsOff(w.c) + 4*bucketOf(k1, k2, w.c)
		atomic.StoreUint32(w.t.p32(nextOff(w.c)+4*i), w.t.load32(bucket))
		atomic.StoreUint32(w.t.p32(bucket), uint32(i))
	}
	return w, h, nil
}

func (w *wfile) mmap(size int64) error {
	mem, err := unix.Mmap(int(w.f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("%s: mmap: %w", w.name, err)
	}
	if w.mem != nil {
		unix.Munmap(w.mem)
	}
	w.mem, w.t = mem, table{b: mem}
	return nil
}

func (w *wfile) close() error {
	if w.mem != nil {
		unix.Munmap(w.mem)
		w.mem, w.t = nil, table{}
	}
	return w.f.Close()
}

func (w *wfile) store64(off, v uint64) { atomic.StoreUint64(w.t.p64(off), v) }

// find returns the node holding a key, 0 if none does. Chains lead to
// older nodes only (checked when the file was opened), so it ends.
func (w *wfile) find(k1, k2 uint64) uint64 {
	bo, no := bucketsOff(w.c), nextOff(w.c)
	for i := uint64(w.t.load32(bo + 4*bucketOf(k1, k2, w.c))); i != 0; i = uint64(w.t.load32(no + 4*i)) {
		if n1, n2, _ := w.t.node(i); n1 == k1 && n2 == k2 {
			return i
		}
	}
	return 0
}

// add adds n to node i's count. One 8-byte store: a reader sees the old
// count or the new one.
func (w *wfile) add(i, n uint64) {
	p := w.t.p64(headerSize + i*nodeSize + 16)
	atomic.StoreUint64(p, atomic.LoadUint64(p)+n)
}

// insert adds a node for a key the file does not hold, with count n.
func (w *wfile) insert(k1, k2, n uint64) (uint64, error) {
	if w.u == w.c {
		if err := w.grow(); err != nil {
			return 0, err
		}
	}
	i := w.u
	off := headerSize + i*nodeSize
	w.store64(off, k1)
	w.store64(off+8, k2)
	w.store64(off+16, n)
	bucket := bucketsOff(w.c) + 4*bucketOf(k1, k2, w.c)
	atomic.StoreUint32(w.t.p32(nextOff(w.c)+4*i), w.t.load32(bucket))
	hook("node")
	w.store64(offUsed, i+1)
	hook("published")
	atomic.StoreUint32(w.t.p32(bucket), uint32(i))
	w.u = i + 1
	return i, nil
}

// grow doubles the capacity. The nodes stay where they are; the bigger
// node array takes the place of the old chains, and the new chains go
// past the old end of the file, so until the capacity is stored the file
// is the old one, whole.
func (w *wfile) grow() error {
	nc := w.c * 2
	if nc > maxCapacity {
		return fmt.Errorf("%s: %w", w.name, ErrTableFull)
	}
	size := fileSize(nc)
	more := size - fileSize(w.c)
	if err := w.space.reserve(0, more); err != nil {
		return err
	}
	if err := allocate(w.f, size); err != nil {
		if w.space != nil {
			w.space.bytes -= more
		}
		return noSpace(w.name, err)
	}
	hook("allocated")
	if err := w.mmap(size); err != nil {
		return err
	}
	bo, no := bucketsOff(nc), nextOff(nc)
	// A writer killed in an earlier grow may have left chains here.
	clear(w.mem[bo:size])
	for i := uint64(1); i < w.u; i++ {
		k1, k2, _ := w.t.node(i)
		b := bo + 4*bucketOf(k1, k2, nc)
		le.PutUint32(w.mem[no+4*i:], le.Uint32(w.mem[b:]))
		le.PutUint32(w.mem[b:], uint32(i))
	}
	hook("rehashed")
	w.store64(offCapacity, nc)
	w.c = nc
	return nil
}

// allocate gives the file its first size bytes, blocks and all: fallocate,
// or where the filesystem has none, zeros written.
func allocate(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if err != unix.EOPNOTSUPP && err != unix.ENOSYS {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	zeros := make([]byte, 64<<10)
	for off := fi.Size(); off < size; {
		n, err := f.WriteAt(zeros[:min(int64(len(zeros)), size-off)], off)
		if err != nil {
			return err
		}
		off += int64(n)
	}
	return nil
}

// noSpace wraps an error with ErrNoSpace when it is one.
func noSpace(name string, err error) error {
	var errno unix.Errno
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if errors.As(err, &errno) && (errno == unix.ENOSPC || errno == unix.EDQUOT || errno == unix.EFBIG) {
		return fmt.Errorf("%s: %w: %w", name, ErrNoSpace, err)
	}
	return fmt.Errorf("%s: %w", name, err)
}
