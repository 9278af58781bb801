package unwind

import (
	"slices"
	"testing"

	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/perfdata"
)

// noMappings knows no process: every pc is in no mapping.
type noMappings struct{}

func (noMappings) Lookup(uint32, uint64, uint64, bool) *process.Mapping { return nil }

// TestCallchainEmptyStack: a sample whose stack copy is empty (execve's,
// taken in the kernel after the old image is gone) has no user part, as
// in perf; with a copy, the sampled user pc starts the user part even
// where it is in no mapping.
func TestCallchainEmptyStack(t *testing.T) {
	w := New(Options{Procs: noMappings{}}).Walker()
	attr := &perfdata.Attr{SampleType: perfdata.SampleRegsUser | perfdata.SampleStackUser, SampleRegsUser: 1<<7 | 1<<8} // perf's SP and IP
	kernel := []uint64{perfdata.CallchainKernel, 0xffffffff81000130}
	s := &perfdata.Sample{Common: perfdata.Common{Attr: attr}, RegsUserABI: 2, RegsUser: []uint64{0x7ffc00000000, 0x7f0000001000}, Callchain: kernel}
	got, stop, ok := w.Callchain(s, nil)
	if !ok || stop != StopStack || !slices.Equal(got, kernel) {
		t.Errorf("empty copy: %#x, %v, %v; want the kernel part alone, stopped at the stack copy", got, stop, ok)
	}
	s.StackUser, s.StackDyn = make([]byte, 64), 64
	got, stop, _ = w.Callchain(s, nil)
	want := append(slices.Clone(kernel), perfdata.CallchainUser, 0x7f0000001000)
	if stop != StopNoMap || !slices.Equal(got, want) {
		t.Errorf("with a copy: %#x, %v; want %#x, no mapping", got, stop, want)
	}
}
