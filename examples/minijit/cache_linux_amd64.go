package main

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// callJIT calls generated code at fn with arg in rdi and returns rax.
//
//go:noescape
func callJIT(fn, arg uintptr) uintptr

// cache is one executable region cut into fixed-size slots. Code is
// re-generated into a slot in place, so a new generation reuses the address
// of the one it replaces: the case a profiler must not get wrong.
type cache struct {
	mem      []byte
	slotSize int
}

// newCache maps slots*slotSize bytes (rounded up to pages) read-write, then
// makes them executable and not writable: the region is never both.
func newCache(slots, slotSize int) (*cache, error) {
	size := slots * slotSize
	page := unix.Getpagesize()
	size = (size + page - 1) / page * page
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("code cache: mmap %d bytes: %w", size, err)
	}
	c := &cache{mem: mem, slotSize: slotSize}
	fill(mem)
	if err := unix.Mprotect(mem, unix.PROT_READ|unix.PROT_EXEC); err != nil {
		unix.Munmap(mem)
		return nil, fmt.Errorf("code cache: mprotect: %w", err)
	}
	return c, nil
}

// addr is where slot's code starts.
func (c *cache) addr(slot int) uintptr { return uintptr(unsafe.Pointer(&c.mem[slot*c.slotSize])) }

// slots is how many slots the region holds.
func (c *cache) slots() int { return len(c.mem) / c.slotSize }

// write replaces the code in slot. The whole region is writable, and not
// executable, while it runs: no generated code runs during a write because
// one thread both compiles and calls.
func (c *cache) write(slot int, code []byte) (uintptr, error) {
	if slot < 0 || slot >= c.slots() {
		return 0, fmt.Errorf("code cache: no slot %d in %d", slot, c.slots())
	}
	if len(code) > c.slotSize {
		return 0, fmt.Errorf("code cache: %d bytes of code do not fit a %d-byte slot", len(code), c.slotSize)
	}
	if err := unix.Mprotect(c.mem, unix.PROT_READ|unix.PROT_WRITE); err != nil {
		return 0, fmt.Errorf("code cache: make writable: %w", err)
	}
	s := c.mem[slot*c.slotSize : (slot+1)*c.slotSize]
	fill(s[copy(s, code):])
	if err := unix.Mprotect(c.mem, unix.PROT_READ|unix.PROT_EXEC); err != nil {
		return 0, fmt.Errorf("code cache: make executable: %w", err)
	}
	return c.addr(slot), nil
}

// call runs the code in slot on arg.
func (c *cache) call(slot int, arg uint64) uint64 {
	return uint64(callJIT(c.addr(slot), uintptr(arg)))
}

func (c *cache) close() error {
	if err := unix.Munmap(c.mem); err != nil {
		return fmt.Errorf("code cache: munmap: %w", err)
	}
	return nil
}

// fill sets unused code bytes to int3, so a stray jump traps.
func fill(b []byte) {
	for i := range b {
		b[i] = 0xcc
	}
}

// threadCPU is the CPU time this OS thread has used.
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		// Linux has had this clock since 2.6.12; without it there is no truth to report.
		panic(fmt.Sprintf("clock_gettime(CLOCK_THREAD_CPUTIME_ID): %v", err))
	}
	return ts.Nano()
}
