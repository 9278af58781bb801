package hugepages

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestHeap checks that memory allocated after Heap lies in a mapping the
// kernel marked for huge pages (the "hg" flag of /proc/self/smaps), on
// systems where the advice is taken.
func TestHeap(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(mode), "[madvise]") && !strings.Contains(string(mode), "[always]") {
		t.Skipf("transparent huge pages are not available here (%q, %v): nothing to advise", mode, err)
	}
	if !Heap(64 << 20) {
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

// TestHeapOneCollection: Heap collects once, to free its block; the
// block's allocation must not start a collection of its own.
func TestHeapOneCollection(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(123))
	// No collection under way to end while Heap runs and be counted: the
	// tests before this one allocate, and with -race a cycle they started
	// can still be marking.
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	Heap(64 << 20)
	runtime.ReadMemStats(&after)
	if n := after.NumGC - before.NumGC; n != 1 {
		t.Errorf("Heap ran %d collections, want 1", n)
	}
	if pct := debug.SetGCPercent(123); pct != 123 {
		t.Errorf("GC percent after Heap = %d, want 123 as before", pct)
	}
}
