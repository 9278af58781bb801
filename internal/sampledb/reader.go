package sampledb

import (
	"errors"
	"fmt"
	"iter"
	"os"

	"golang.org/x/sys/unix"
)

// Entry is one key of a sample file and its count.
type Entry struct {
	// Key1 and Key2 are (offset, 0), (offset, sequence) or (from, to),
	// as the file's KeyKind says.
	Key1, Key2 uint64
	Count      uint64
}

// Reader reads one sample file: its header and its counts. A file the
// daemon is writing reads as it was when it was opened, with the counts
// of that moment or later.
type Reader struct {
	Header
	name string // for errors
	t    table
	l    layout
	mem  []byte // the mapping, if any
	err  error
}

// maxFileSize bounds a sample file a reader maps: 2^31 nodes of 32 bytes.
const maxFileSize = headerSize + maxCapacity*slotSize

// Read reads a sample file from its bytes, checking all of it first; the
// Reader keeps b. Errors wrap ErrFormat and name an offset, never quote
// the bytes.
func Read(b []byte) (*Reader, error) {
	r := &Reader{name: "sample file", t: table{b: aligned(b)}}
	h, l, err := validate(r.t)
	if errors.Is(err, errMoved) {
		err = fmt.Errorf("%w: capacity changed while it was read", ErrFormat)
	}
	if err != nil {
		return nil, err
	}
	r.Header, r.l = h, l
	return r, nil
}

// OpenFile maps the sample file at path read-only and checks it. A file
// the daemon grows while it is checked is mapped again.
func OpenFile(path string) (*Reader, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return openMapped(f, path)
}

func openMapped(f *os.File, name string) (r *Reader, err error) {
	// A table doubles at most 28 times.
	for range 32 {
		r, err = mapOnce(f, name)
		if !errors.Is(err, errMoved) {
			return r, err
		}
	}
	return nil, fmt.Errorf("%s: %w: it keeps growing while it is read", name, ErrFormat)
}

func mapOnce(f *os.File, name string) (r *Reader, err error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w: not a regular file", name, ErrFormat)
	}
	size := fi.Size()
	if size < headerSize {
		return nil, fmt.Errorf("%s: %w: %d bytes, shorter than the %d-byte header", name, ErrFormat, size, headerSize)
	}
	size = min(size, maxFileSize)
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", name, err)
	}
	r = &Reader{name: name, t: table{b: mem}, mem: mem}
	defer func() {
		if err != nil {
			unix.Munmap(mem)
			r = nil
		}
	}()
	defer faultGuard(&mem, &err)()
	h, l, err := validate(r.t)
	if err != nil {
		// A writer allocates before it stores a bigger capacity: one
		// that needs more than was mapped is in a file grown since.
		if fi, serr := f.Stat(); errors.Is(err, errMoved) || serr == nil && fi.Size() > size && size < maxFileSize {
			return nil, errMoved
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r.Header, r.l = h, l
	return r, nil
}

// Len is the number of keys in the file.
func (r *Reader) Len() int { return int(r.l.used - 1) }

// Entries yields the file's keys and counts, in the order they were first
// counted. A mapped file that faults (truncated under the mapping) ends
// the sequence early; Err says so.
func (r *Reader) Entries() iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		defer faultGuard(&r.mem, &r.err)()
		for i := uint64(1); i < r.l.used; i++ {
			k1, k2, n := r.t.node(i)
			if !yield(Entry{Key1: k1, Key2: k2, Count: n}) {
				return
			}
		}
	}
}

// Lookup returns the count of a key (0 if the file does not hold it).
func (r *Reader) Lookup(key1, key2 uint64) (n uint64) {
	defer faultGuard(&r.mem, &r.err)()
	if i := r.t.lookup(key1, key2, r.l.capacity, r.l.used); i != 0 && i < r.l.used {
		_, _, n = r.t.node(i)
		return n
	}
	if r.l.unlinked {
		// The last node, published but not yet in its chain.
		if k1, k2, c := r.t.node(r.l.used - 1); k1 == key1 && k2 == key2 {
			return c
		}
	}
	return 0
}

// Err is the error that ended Entries or Lookup early, if any.
func (r *Reader) Err() error {
	if r.err != nil {
		return fmt.Errorf("%s: %w", r.name, r.err)
	}
	return nil
}

// Close unmaps the file.
func (r *Reader) Close() error {
	if r.mem == nil {
		return nil
	}
	err := unix.Munmap(r.mem)
	r.mem, r.t.b = nil, nil
	return err
}
