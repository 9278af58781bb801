package record

import (
	"testing"

	"github.com/jitprof/jitprof/perfdata"
)

// TestRunsJIT checks which processes the recorder embeds JIT data for:
// those with anonymous memory as perfdata.IsAnon has it, or a jitdump.
func TestRunsJIT(t *testing.T) {
	cases := []struct {
		name  string
		flags uint32
		want  bool
	}{
		{"/usr/bin/app", 0, false},
		{"//anon", 0, true},
		{"/dev/zero (deleted)", 0, true}, // shared anonymous memory
		{"/memfd:jit (deleted)", 0, true},
		{"[anon:v8]", 0, true},
		{"/mnt/huge/code", perfdata.MapHugeTLB, true},
		{"/tmp/jit-42.dump", 0, true},
		{"/tmp/jit-42.dumpster", 0, false},
	}
	for _, c := range cases {
		im := newImages()
		im.mmap(42, 0x400000, 0x401000, "/usr/bin/app", false)
		im.mmap(42, 0x7f0000, 0x7f1000, c.name, perfdata.IsAnon(c.name, c.flags))
		if got := im.procs[42].runsJIT(); got != c.want {
			t.Errorf("a process that mapped %q (flags %#x): runsJIT %v, want %v", c.name, c.flags, got, c.want)
		}
	}
}
