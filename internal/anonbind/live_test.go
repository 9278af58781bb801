package anonbind

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/jitlog"
)

// TestLive: a Live names nothing before its first Renew, then with the
// handlers of the last Renew only, each Renew claiming the processes
// anew (a handler reads JIT data when it claims).
func TestLive(t *testing.T) {
	var l Live
	if _, ok := l.Resolve(1, 0x1000, 1); ok {
		t.Error("named code before the first Renew")
	}
	if _, ok := l.Age(); ok || l.Claims() != nil {
		t.Error("an age or claims before the first Renew")
	}
	procs := liveProcesses{start: 0x1000, end: 0x2000}
	first, second := &fake{name: "first"}, &fake{name: "second"}
	l.Renew(procs, Options{Handlers: []anon.Handler{first}})
	if af, ok := l.Resolve(1, 0x1000, 1); !ok || af.Func != "first [gen 3]" {
		t.Errorf("after a Renew: %+v, %v", af, ok)
	}
	if age, ok := l.Age(); !ok || age < 0 {
		t.Errorf("age %v, %v after a Renew", age, ok)
	}
	if c := l.Claims(); len(c) != 1 || c[0].Handler != "fake" {
		t.Errorf("claims %+v, want the fake handler's of pid 1", c)
	}
	l.Renew(procs, Options{Handlers: []anon.Handler{second}})
	if af, ok := l.Resolve(1, 0x1000, 1); !ok || af.Func != "second [gen 3]" {
		t.Errorf("after the second Renew: %+v, %v", af, ok)
	}
	if first.claims.Load() != 1 || second.claims.Load() != 1 {
		t.Errorf("claims: %d by the first handlers, %d by the second; want one each", first.claims.Load(), second.claims.Load())
	}
	l.Close()
	if _, ok := l.Resolve(1, 0x1000, 1); ok {
		t.Error("named code after Close")
	}
}

// now is CLOCK_MONOTONIC, the clock of jitlog's records.
func now(t *testing.T) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

// selfProcess is liveProcesses's process as the Recorder knows a live
// one: by its start time.
type selfProcess struct {
	liveProcesses
	start uint64
}

func (s selfProcess) Process(pid uint32) anon.Process {
	p := s.liveProcesses.Process(pid)
	p.StartTime = s.start
	return p
}

// TestLiveKeepsUnchanged: a Renew keeps a claim whose JIT data is as the
// claim read it (the same resolver: nothing read again), and claims
// anew, naming the new code, when the data was written since, when data
// appeared where there was none, and when the process is another.
func TestLiveKeepsUnchanged(t *testing.T) {
	const addr = 0x7f1234560000
	t.Setenv(jitlog.EnvDir, t.TempDir())
	pid := uint32(os.Getpid())
	id, err := linux.Host.Identity(int(pid))
	if err != nil {
		t.Fatal(err)
	}
	procs := selfProcess{liveProcesses{addr, addr + 0x1000}, id.StartTime}
	var l Live
	defer l.Close()
	renew := func() {
		hs, err := anon.Select(nil) // the built-in handlers, made anew as the push makes them
		if err != nil {
			t.Fatal(err)
		}
		l.Renew(procs, Options{Handlers: hs})
	}
	resolver := func() anon.Resolver { return l.b.state[pid].r }
	name := func(at uint64) string {
		af, ok := l.Resolve(pid, addr+0x10, at)
		if !ok {
			return ""
		}
		return af.Func
	}

	// No data yet: no claim; then a jitlog appears, and the next Renew
	// claims it.
	renew()
	if n := name(now(t)); n != "" {
		t.Fatalf("named %q before the JIT wrote anything", n)
	}
	renew() // still nothing: the claim of no handler kept
	if n := name(now(t)); n != "" || l.b.state[pid].reads == nil || l.b.prev[pid] == nil || !l.b.prev[pid].taken.Load() {
		t.Fatalf("named %q with no data still, the claim of none not kept", n)
	}
	jl, err := jitlog.Open(jitlog.Options{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer jl.Close()
	s1, err := jl.CodeLoad(addr, 0x100, "loop", nil)
	if err != nil {
		t.Fatal(err)
	}
	at1 := now(t)
	renew()
	want1 := "loop [gen " + strconv.FormatUint(s1, 10) + "]"
	if n := name(at1); n != want1 {
		t.Fatalf("after the jitlog appeared: %q, want %q", n, want1)
	}
	first := resolver()

	// Unchanged: kept through two Renews, the second without a lookup
	// in between.
	renew()
	if n := name(at1); n != want1 || resolver() != first {
		t.Errorf("unchanged data: %q (kept: %v), want %q from the same claim", n, resolver() == first, want1)
	}
	renew()
	renew()
	if n := name(at1); n != want1 || resolver() != first {
		t.Errorf("after a Renew without lookups: %q (kept: %v), want the same claim", n, resolver() == first)
	}

	// Written: claimed anew, the new generation named.
	if err := jl.CodeUnload(s1); err != nil {
		t.Fatal(err)
	}
	s2, err := jl.CodeLoad(addr, 0x100, "loop", nil)
	if err != nil {
		t.Fatal(err)
	}
	at2 := now(t)
	renew()
	want2 := "loop [gen " + strconv.FormatUint(s2, 10) + "]"
	if n := name(at2); n != want2 || resolver() == first {
		t.Errorf("after the JIT wrote: %q (claimed anew: %v), want %q", n, resolver() != first, want2)
	}
	if n := name(at1); n != want1 {
		t.Errorf("the first generation at its time: %q, want %q", n, want1)
	}

	// Another process with the pid (its start time differs): claimed
	// anew.
	second := resolver()
	renew()
	l.b.prev[pid].proc.StartTime++
	name(at2)
	if resolver() == second {
		t.Error("a claim kept for another process with the pid")
	}
}
