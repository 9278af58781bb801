package resolve

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/symbolize"
)

// TestForget: Forget drops what the Resolver cached of one process, and
// only of it, so that a Resolver that lives for weeks (the daemon's
// push) does not keep the caches of every process the machine ran; a
// process resolved again after it is named as before.
func TestForget(t *testing.T) {
	const kernel = 0xffffffff81000000
	kallsyms := filepath.Join(t.TempDir(), "kallsyms")
	if err := os.WriteFile(kallsyms, fmt.Appendf(nil, "%x T _text\n%x T schedule\n", uint64(kernel), uint64(kernel+0x100)), 0o644); err != nil {
		t.Fatal(err)
	}
	sym := symbolize.New(symbolize.Options{Kallsyms: kallsyms, DebugDirs: []string{}, BuildIDCaches: []string{}})
	b := profile.NewBuilder()
	b.Event(profile.Event{Name: "cpu-clock"})
	r := New(b, process.New(), Options{Symbolizer: sym, LeafOnly: true, SparseMappings: true})
	add := func(pid uint32, tm uint64) string {
		s := Sample{PID: pid, TID: pid, Time: tm, CPU: -1, Mode: ModeKernel, IP: kernel + 0x140, Count: 1, Period: 1}
		r.Add(&s)
		p := b.Meta()
		return p.FuncOf(p.Nodes[p.Entries[len(p.Entries)-1].Stack].Frame).Name
	}
	for pid := uint32(10); pid < 13; pid++ {
		if got := add(pid, uint64(pid)); got != "schedule" {
			t.Fatalf("process %d: %q, want schedule", pid, got)
		}
	}
	r.Forget(12) // the last one asked for
	r.Forget(11)
	if len(r.pids) != 1 || r.pids[10] == nil {
		t.Fatalf("after forgetting 11 and 12, caches of %v, want 10's alone", keys(r.pids))
	}
	if r.last != nil && r.lastPID != 10 {
		t.Fatalf("the last cache asked for is %d's, forgotten", r.lastPID)
	}
	// Its thread cached again; its leaf in the kernel is every
	// process's (kernelLeaves).
	if got := add(12, 20); got != "schedule" || r.pids[12] == nil || len(r.pids[12].threads) != 1 || len(r.kernelLeaves) != 1 {
		t.Fatalf("process 12 again: %q, its cache %+v, %d kernel leaves", got, r.pids[12], len(r.kernelLeaves))
	}
}

func keys(m map[uint32]*pidCache) []uint32 {
	var out []uint32
	for k := range m {
		out = append(out, k)
	}
	return out
}
