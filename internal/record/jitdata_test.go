package record

import (
	"testing"

	"github.com/jitprof/jitprof/internal/process"
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
		p := process.Process{PID: 42, Mappings: []*process.Mapping{
			{Start: 0x400000, End: 0x401000, Path: "/usr/bin/app", Exec: true},
			{Start: 0x7f0000, End: 0x7f1000, Path: c.name, Anon: perfdata.IsAnon(c.name, c.flags), Exec: true},
		}}
		if got := runsJIT(p); got != c.want {
			t.Errorf("a process that mapped %q (flags %#x): runsJIT %v, want %v", c.name, c.flags, got, c.want)
		}
	}
}
