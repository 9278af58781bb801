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
// size bytes, which the runtime maps fresh and does not touch, marks them
// MADV_HUGEPAGE and frees them: the runtime hands out the lowest free
// pages first, so what the program allocates next lands there and faults
// in 2 MiB at a time. Nothing is touched, so nothing is charged until it
// is used. A guard below the block keeps its first huge page from sharing
// a range with objects already touched, where faults stay 4 KiB ones.
//
// Only the first call does this (it runs a garbage collection to free
// the block, with collection off while it is allocated); later calls
// return the first one's answer. Where huge pages are off ("never") or
// always on, it changes nothing but the heap's address space. What each
// piece saved, in faults and milliseconds: bench/RESULTS.md.
func Heap(size int) bool {
	advised.Do(func() { advised.ok = heap(size) })
	return advised.ok
}

// guard is the never-touched allocation below the block, kept for the
// program's life: untouched, it costs address space, not memory.
var guard []byte

// guardSize is a huge page: the guard covers what lies below the block
// in the range of the block's first huge page, and no more: it is live
// heap for the program's life, which the collector's goal counts five
// times at GOGC 400 (bench/RESULTS.md).
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
