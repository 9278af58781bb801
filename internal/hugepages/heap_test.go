package hugepages

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestHeap: Heap runs one collection, to free its block (its allocation
// must not start one of its own), leaves the GC percent as it was, and a
// second call does nothing; memory allocated after it lies in a mapping
// the kernel marked for huge pages (the "hg" flag of /proc/self/smaps),
// on systems where the advice is taken.
func TestHeap(t *testing.T) {
	advised = new(once) // the first call of this run, whatever ran before
	defer debug.SetGCPercent(debug.SetGCPercent(123))
	// No collection under way to end while Heap runs and be counted: with
	// -race a cycle the test binary's start-up began can still be marking.
	runtime.GC()
	var before, after, again runtime.MemStats
	runtime.ReadMemStats(&before)
	ok := Heap(64 << 20)
	runtime.ReadMemStats(&after)
	if n := after.NumGC - before.NumGC; n != 1 {
		t.Errorf("Heap ran %d collections, want 1", n)
	}
	if pct := debug.SetGCPercent(123); pct != 123 {
		t.Errorf("GC percent after Heap = %d, want 123 as before", pct)
	}
	if Heap(64<<20) != ok {
		t.Error("a second call answered otherwise than the first")
	}
	runtime.ReadMemStats(&again)
	if n := again.NumGC - after.NumGC; n != 0 {
		t.Errorf("a second call ran %d collections, want none", n)
	}

	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(mode), "[madvise]") && !strings.Contains(string(mode), "[always]") {
		t.Skipf("transparent huge pages are not available here (%q, %v): nothing to advise", mode, err)
	}
	if !ok {
		t.Fatal("the kernel refused MADV_HUGEPAGE on the heap")
	}
	b := make([]byte, 8<<20)
	b[0] = 1
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := strings.Cut(strings.Fields(line + " x")[0], "-"); ok && !strings.HasSuffix(line, ":") {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = l <= addr && addr < h
				continue
			}
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			if !strings.Contains(line, " hg") {
				t.Errorf("the mapping of memory allocated after Heap is not advised for huge pages: %s", line)
			}
			return
		}
	}
	t.Fatalf("no mapping in /proc/self/smaps holds %#x", addr)
}

// TestHeapGuard: in a young program, as jitprof is when it opens a
// recording, the guard lies just below the block, and no page of the
// huge page's range that holds the block's start is in memory, so the
// first allocations after Heap fault in whole huge pages. It runs in a
// child process: the test binary's heap is not young.
func TestHeapGuard(t *testing.T) {
	if os.Getenv("JITPROF_HEAP_GUARD_CHILD") == "1" {
		Heap(64 << 20)
		g := uintptr(unsafe.Pointer(unsafe.SliceData(guard)))
		if g+guardSize != lastBlock {
			fmt.Printf("guard %#x-%#x, block at %#x: not just below it\n", g, g+guardSize, lastBlock)
			os.Exit(1)
		}
		lo := lastBlock &^ (hugePage - 1)
		if lo == lastBlock {
			os.Exit(0) // the block starts a range of its own
		}
		vec := make([]byte, (lastBlock-lo)/uintptr(os.Getpagesize()))
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, lo, lastBlock-lo, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
			fmt.Printf("mincore: %v\n", errno)
			os.Exit(1)
		}
		for i, v := range vec {
			if v&1 != 0 {
				fmt.Printf("page %#x, below the block at %#x in its huge page's range, is in memory\n", lo+uintptr(i*os.Getpagesize()), lastBlock)
				os.Exit(1)
			}
		}
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHeapGuard$")
	cmd.Env = append(os.Environ(), "JITPROF_HEAP_GUARD_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%v\n%s", err, out)
	}
}
