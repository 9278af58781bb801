package perfevent

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseCallGraph(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint32
		ok   bool
	}{
		{"fp", 0, true}, {"dwarf", 8192, true}, {"dwarf,4096", 4096, true}, {"dwarf,1", 8, true},
		{"dwarf,65528", 65528, true}, {"dwarf,65529", 0, false}, {"dwarf,0", 0, false}, {"dwarf,x", 0, false},
		{"lbr", 0, false}, {"", 0, false},
	} {
		got, err := ParseCallGraph(c.in)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("%q: %d, %v; want %d, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

// TestDWARFAttr checks the attr of --call-graph dwarf is perf record's
// (as perf evlist -v prints it for perf's own recording): user registers
// with perf's x86-64 mask, the stack size, the kernel's callchain without
// its user part, and data mappings.
func TestDWARFAttr(t *testing.T) {
	a := buildAttr(Options{Event: mustParse("cpu-clock"), UserStack: 4096}, true)
	want := uint64(DefaultSampleType | unix.PERF_SAMPLE_CALLCHAIN | unix.PERF_SAMPLE_REGS_USER | unix.PERF_SAMPLE_STACK_USER)
	if a.Sample_type != want || a.Sample_regs_user != 0xff0fff || a.Sample_stack_user != 4096 ||
		a.Bits&unix.PerfBitExcludeCallchainUser == 0 || a.Bits&unix.PerfBitMmapData == 0 || a.Sample_max_stack != DefaultMaxStack {
		t.Errorf("attr %+v", a)
	}
	if a := buildAttr(Options{Event: mustParse("cpu-clock"), Callchain: true}, true); a.Sample_type&unix.PERF_SAMPLE_STACK_USER != 0 || a.Bits&unix.PerfBitExcludeCallchainUser != 0 {
		t.Errorf("frame pointers: attr %+v", a)
	}
}
