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
