package hugepages

import (
	"runtime"
	"runtime/debug"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of an x86-64 or arm64 (4 KiB granule) huge page.
const hugePage = 2 << 20

// Heap makes the next size bytes the Go heap grows into eligible for huge
// pages, and reports whether the kernel took the advice. It allocates
// size bytes, which the runtime maps fresh from the system and does not
// touch, marks them MADV_HUGEPAGE, and frees them: the runtime hands out
// the lowest free pages first, so what the program allocates next lands
// there, and faults in 2 MiB at a time. Nothing is touched, so nothing
// is charged to the process until it is used; memory the runtime later
// returns to the system (MADV_DONTNEED) keeps the advice.
//
// A guard of guardSize, allocated just before the block and never
// touched or freed, sits between the heap in use and the block: without
// it the block's first 2 MiB can share a huge page's range with objects
// already touched, where faults stay 4 KiB ones, and that range is the
// first the program allocates from after the block is freed (a report
// took 170 to 500 faults there).
//
// Only the first call does this, early in a program's life: it runs a
// garbage collection to free the block, and only that one; later calls
// (the web UI opens its recording again at each reload) return the
// first one's answer. Collection is off while the block is allocated,
// which would otherwise start a collection of its own: in a virtual
// machine each one costs a report about 350 page faults (4 ms), most of
// them the runtime's first use of its span lists.
// Where huge pages are off ("never") or always on, or the kernel has
// none, it changes nothing but the heap's address space.
func Heap(size int) bool {
	advised.Do(func() { advised.ok = heap(size) })
	return advised.ok
}

// guard is the never-touched allocation below the block, kept for the
// program's life: untouched, it costs address space, not memory.
var guard []byte

// guardSize is a huge page: the guard covers what lies below the block
// in the range of the block's first huge page. It is live heap for the
// program's life, which the collector's goal counts five times at GOGC
// 400: a 4 MiB guard took a 2M-sample call-graph report from 52 to 71 MB.
const guardSize = hugePage

// lastBlock is where the block began, for a test.
var lastBlock uintptr

// advised is Heap's first answer; a test starts afresh with a new one.
var advised = new(once)

type once struct {
	sync.Once
	ok bool
}

func heap(size int) bool {
	if size < 2*hugePage {
		return false
	}
	pct := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(pct)
	// Large objects are placed at the lowest free address that holds
	// them: early in a program's life, with no free run of guardSize in
	// the heap, the guard goes at its end and the block right above it
	// (TestHeapGuard; jitprof's reports of each size and kind had it so).
	guard = make([]byte, guardSize)
	b := make([]byte, size)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lastBlock = p
	// Rounded out to whole huge pages: the block's neighbours are heap
	// too, and a huge page the block only partly covers is still one
	// fault instead of 512. The range goes to the system call as
	// numbers: it is no Go object.
	lo := p &^ (hugePage - 1)
	hi := (p + uintptr(size) + hugePage - 1) &^ (hugePage - 1)
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_HUGEPAGE)
	runtime.KeepAlive(b)
	b = nil
	runtime.GC()
	// ENOMEM: part of the range is not mapped, and the rest took it.
	return errno == 0 || errno == unix.ENOMEM
}
