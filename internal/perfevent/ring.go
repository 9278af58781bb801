package perfevent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrCorruptRing means a ring buffer held a record whose header cannot be
// right; the unread rest of the ring was dropped to get back in step.
var ErrCorruptRing = errors.New("corrupt perf ring")

const headerSize = 8 // struct perf_event_header: u32 type, u16 misc, u16 size

// Ring is the mmap'd ring buffer of one perf event file descriptor: a
// metadata page (struct perf_event_mmap_page) followed by 2^n data pages.
type Ring struct {
	mem  []byte
	meta *unix.PerfEventMmapPage
	cpu  int
	ringData
}

// ringData is the kernel-independent part of a Ring, so that tests can drive
// it with synthetic buffers.
type ringData struct {
	data    []byte // len is a power of two
	scratch []byte // holds records that wrap the end of data
	lost    uint64 // sum of PERF_RECORD_LOST counts seen
}

// mapRing maps the ring of fd with the given number of data pages, which
// must be a power of two.
func mapRing(fd, cpu, pages int) (*Ring, error) {
	if pages <= 0 || pages&(pages-1) != 0 {
		return nil, fmt.Errorf("perf ring: %d pages is not a power of two", pages)
	}
	pageSize := unix.Getpagesize()
	// PROT_WRITE makes the kernel honour data_tail and never overwrite
	// unread records; it reports what it had to drop as PERF_RECORD_LOST.
	mem, err := unix.Mmap(fd, 0, (1+pages)*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("perf ring: mmap of %d pages: %w: over the locked-memory limit; use fewer pages (-m) or raise /proc/sys/kernel/perf_event_mlock_kb", pages, ErrPermission)
		}
		return nil, fmt.Errorf("perf ring: mmap of %d pages: %w", pages, err)
	}
	meta := (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))
	off, size := uint64(pageSize), uint64(pages*pageSize)
	// data_offset and data_size are zero on kernels before 4.1.
	if meta.Data_size != 0 {
		off, size = meta.Data_offset, meta.Data_size
	}
	if off+size > uint64(len(mem)) || size&(size-1) != 0 {
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("perf ring: kernel reports data at %d+%d in a %d-byte mapping", off, size, len(mem))
	}
	return &Ring{mem: mem, meta: meta, cpu: cpu, ringData: ringData{data: mem[off : off+size]}}, nil
}

// Read calls fn with each record the kernel has written since the last
// Read, header included, and then frees their space. rec is only valid
// during the call. Read returns how many records it delivered; after
// ErrCorruptRing the ring is empty and can be read again.
func (r *Ring) Read(fn func(rec []byte)) (int, error) {
	// The acquire load pairs with the kernel's smp_wmb before it publishes
	// data_head: every byte before head is visible once head is.
	head := atomic.LoadUint64(&r.meta.Data_head)
	tail := r.meta.Data_tail // only we write it
	newTail, n, err := r.read(head, tail, fn)
	// The store must follow our last read of the data (the kernel may
	// overwrite it at once); an atomic store is at least a release.
	atomic.StoreUint64(&r.meta.Data_tail, newTail)
	return n, err
}

// CPU returns the CPU whose events write into the ring.
func (r *Ring) CPU() int { return r.cpu }

// Lost returns how many records the kernel reported dropping because the
// ring was full.
func (r *Ring) Lost() uint64 { return r.lost }

func (r *Ring) close() error {
	if r.mem == nil {
		return nil
	}
	err := unix.Munmap(r.mem)
	r.mem, r.meta, r.data = nil, nil, nil
	return err
}

// read delivers the records between tail and head (free-running byte
// counters, as in perf_event_mmap_page) and returns the new tail. On
// corruption it returns head, dropping the rest, so no caller can spin on a
// bad header.
func (d *ringData) read(head, tail uint64, fn func(rec []byte)) (uint64, int, error) {
	size := uint64(len(d.data))
	mask := size - 1
	if head-tail > size {
		return head, 0, fmt.Errorf("%w: head %d is %d bytes past tail %d in a %d-byte ring", ErrCorruptRing, head, head-tail, tail, size)
	}
	n := 0
	for tail != head {
		avail := head - tail
		off := tail & mask
		var hdr [headerSize]byte
		if avail < headerSize {
			return head, n, fmt.Errorf("%w: %d stray bytes at offset %d", ErrCorruptRing, avail, off)
		}
		d.copyOut(hdr[:], off)
		recSize := uint64(binary.NativeEndian.Uint16(hdr[6:]))
		if recSize < headerSize || recSize > avail {
			return head, n, fmt.Errorf("%w: record at offset %d (type %d) has size %d with %d bytes written",
				ErrCorruptRing, off, binary.NativeEndian.Uint32(hdr[:]), recSize, avail)
		}
		var rec []byte
		if off+recSize <= size {
			rec = d.data[off : off+recSize]
		} else {
			if uint64(cap(d.scratch)) < recSize {
				d.scratch = make([]byte, recSize, max(recSize, 256))
			}
			rec = d.scratch[:recSize]
			d.copyOut(rec, off)
		}
		if binary.NativeEndian.Uint32(rec) == unix.PERF_RECORD_LOST && len(rec) >= headerSize+16 {
			d.lost += binary.NativeEndian.Uint64(rec[headerSize+8:])
		}
		fn(rec)
		n++
		tail += recSize
	}
	return tail, n, nil
}

// copyOut copies len(dst) bytes starting at off, wrapping at the end.
func (d *ringData) copyOut(dst []byte, off uint64) {
	c := copy(dst, d.data[off:])
	copy(dst[c:], d.data)
}
