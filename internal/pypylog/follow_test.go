package pypylog

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// follow feeds data to a Follower in pieces whose ends cut, as a file
// read while it grows, and returns the codes and names it gave.
func follow(t testing.TB, data []byte, cuts []int) ([]Code, []string, error) {
	f := NewFollower()
	var codes []Code
	var names []string
	var pending []byte
	at := 0
	for _, c := range append(cuts, len(data)) {
		c = min(max(c, at), len(data))
		pending = append(pending, data[at:c]...)
		at = c
		n, err := f.Feed(pending)
		cs, ns := f.Codes()
		codes, names = append(codes, cs...), append(names, ns...)
		for i, tr := range f.b.log.Traces {
			if len(tr.Ops)+len(tr.Points)+len(tr.Text)+len(tr.Labels)+len(tr.Calls) != 0 || tr.Inputs != "" || tr.Name != "" {
				t.Fatalf("the Follower keeps trace %d's operations, merge points, text, labels, calls, inputs or name", i)
			}
		}
		if err != nil {
			return codes, names, err
		}
		pending = append(pending[:0], pending[n:]...)
	}
	if f.Held() < len(codes) {
		t.Fatalf("Held %d with %d codes", f.Held(), len(codes))
	}
	return codes, names, nil
}

// sameCodes compares what names code: its kind, number, guard, range and
// time.
func sameCodes(t testing.TB, got []Code, gotNames []string, want *Log) {
	t.Helper()
	wantNames := want.Names()
	if len(got) != len(want.Codes) {
		t.Fatalf("the Follower gave %d codes, Read %d", len(got), len(want.Codes))
	}
	for i, c := range got {
		w := want.Codes[i]
		if c.Bridge != w.Bridge || c.Loop != w.Loop || c.Guard != w.Guard || c.Start != w.Start || c.End != w.End || c.Time != w.Time {
			t.Fatalf("code %d: the Follower's %+v, Read's %+v", i, c, w)
		}
		if gotNames[i] != wantNames[i] {
			t.Fatalf("code %d: the Follower names it %q, Read %q", i, gotNames[i], wantNames[i])
		}
	}
}

// TestFollower: a real PyPy log (loops and their bridges), fed in
// pieces cut anywhere, mid-line and mid-section, gives the codes Read
// gives, with the names Log.Names gives, and keeps no operations.
func TestFollower(t *testing.T) {
	b, err := os.ReadFile("testdata/bridges.log")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Read(bytes.NewReader(b), Options{})
	if err != nil {
		t.Fatal(err)
	}
	bridges := 0
	for _, c := range want.Codes {
		if c.Bridge {
			bridges++
		}
	}
	if bridges == 0 || len(want.Codes) == bridges {
		t.Fatalf("the test log has %d codes, %d of them bridges: want both kinds", len(want.Codes), bridges)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		var cuts []int
		for range round % 20 {
			cuts = append(cuts, rng.IntN(len(b)+1))
		}
		slices.Sort(cuts)
		codes, names, err := follow(t, b, cuts)
		if err != nil {
			t.Fatal(err)
		}
		sameCodes(t, codes, names, want)
	}
	// A line at a time, as a log flushed at each section's end.
	var cuts []int
	for i, c := range b {
		if c == '\n' {
			cuts = append(cuts, i+1)
		}
	}
	codes, names, err := follow(t, b, cuts)
	if err != nil {
		t.Fatal(err)
	}
	sameCodes(t, codes, names, want)
	f := NewFollower()
	if _, err := f.Feed(b); err != nil {
		t.Fatal(err)
	}
	for _, tr := range f.b.log.Traces {
		if len(tr.Ops) != 0 || len(tr.Points) != 0 {
			t.Fatalf("the Follower keeps a trace's %d operations and %d merge points", len(tr.Ops), len(tr.Points))
		}
	}
	if f.Lines() != want.Lines {
		t.Errorf("the Follower read %d lines, Read %d", f.Lines(), want.Lines)
	}
}

// TestFollowerGuardBound: past MaxFollowGuards, guards are not kept, and
// a bridge out of one is named as PyPy names it.
func TestFollowerGuardBound(t *testing.T) {
	f := NewFollower()
	f.b.guardRoom = 1
	log := "[10] {jit-backend-addr\nLoop 0 (f;/x.py:1-2~#0 FOR_ITER) has address 0x1000 to 0x1100 (bootstrap 0x1000)\n[11] jit-backend-addr}\n" +
		"[12] {jit-log-opt-loop\n# Loop 0 (f;/x.py:1-2~#0 FOR_ITER) : loop with 3 ops\n[p0]\n" +
		"+10: guard_true(i1, descr=<Guard0xa1>) [p0]\n+20: guard_true(i2, descr=<Guard0xa2>) [p0]\n+30: jump(p0, descr=TargetToken(1))\n[13] jit-log-opt-loop}\n" +
		"[14] {jit-backend-addr\nbridge out of Guard 0xa1 has address 0x2000 to 0x2100\n[15] jit-backend-addr}\n" +
		"[16] {jit-backend-addr\nbridge out of Guard 0xa2 has address 0x3000 to 0x3100\n[17] jit-backend-addr}\n"
	if _, err := f.Feed([]byte(log)); err != nil {
		t.Fatal(err)
	}
	_, names := f.Codes()
	want := []string{"f [loop 0]", "f [bridge 1 of loop 0]", "bridge out of guard 0xa2"}
	if !slices.Equal(names, want) {
		t.Errorf("names %q, want %q", names, want)
	}
	if len(f.b.log.Codes) != 3 || len(f.b.log.Traces) != 1 || len(f.b.guards) != 1 {
		t.Errorf("%d codes, %d traces, %d guards kept; want 3, 1, 1", len(f.b.log.Codes), len(f.b.log.Traces), len(f.b.guards))
	}
}

// TestFollowerHeld: what a Follower keeps in memory is what Held says,
// within a factor of two (the garbage collector's measure of the heap
// includes what maps and slices keep spare), for a real log and for a
// hostile one: long input lines and loop names (a Follower keeps
// neither), profile events (not kept) and threads with sections open.
func TestFollowerHeld(t *testing.T) {
	real, err := os.ReadFile("testdata/bridges.log")
	if err != nil {
		t.Fatal(err)
	}
	var hostile bytes.Buffer
	long := strings.Repeat("p1, ", 16<<10)
	for i := range 200 {
		fmt.Fprintf(&hostile, "[%x] {jit-backend-addr\nLoop %d (f%s;/x.py:1-2~#0 FOR_ITER) has address 0x%x to 0x%x\n[%x] jit-backend-addr}\n", 4*i+1, i, long[i:], 0x1000*(i+1), 0x1000*(i+1)+0x100, 4*i+2)
		fmt.Fprintf(&hostile, "[%x] {jit-log-opt-loop\n# Loop %d (f%s) : loop%s with 3 ops\n[%s]\n+10: guard_true(i1, descr=<Guard0x%x>) [p0]\n[%x] jit-log-opt-loop}\n", 4*i+3, i, long, long, long, 0xa0+i, 4*i+4)
	}
	for i := range 10000 {
		fmt.Fprintf(&hostile, "[%x] {jit-profile-enter\nLoop %d\n[%x] jit-profile-enter}\n", 0x10000+2*i, i, 0x10001+2*i)
	}
	for i := range MaxThreads - 1 {
		fmt.Fprintf(&hostile, "%d# [%x] {gc-minor\n", i, 0x100000+i)
	}
	for name, log := range map[string][]byte{"real": bytes.Repeat(real, 200), "hostile": hostile.Bytes()} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			f := NewFollower()
			if _, err := f.Feed(log); err != nil {
				t.Fatal(err)
			}
			f.Codes()
			runtime.GC()
			runtime.ReadMemStats(&after)
			heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			held := int64(f.Held()) * HeldUnit
			runtime.KeepAlive(f)
			t.Logf("%d bytes in the heap, Held says %d (%d codes, %d traces)", heap, held, len(f.b.log.Codes), len(f.b.log.Traces))
			if heap > 2*held || held > 2*max(heap, 1<<16) {
				t.Errorf("%d bytes in the heap, Held says %d: not within a factor of two", heap, held)
			}
		})
	}
}
