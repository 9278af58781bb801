package pathtime_test

import (
	"os"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/pathtime"
	"github.com/jitprof/jitprof/jitlog"
	"golang.org/x/sys/unix"
)

func monotonic() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// call runs fn and returns the monotonic clock just before and after it:
// the logger's own stamp lies between the two.
func call(fn func()) (before, after uint64) {
	before = monotonic()
	fn()
	return before, monotonic()
}

func spin(d time.Duration) {
	for end := monotonic() + uint64(d); monotonic() < end; {
	}
}

// TestFromJitlogSplit logs a JUMP from loop_a to loop_b and an exit, five
// times, and checks each region's total against the clock read around the
// logging calls. Bounds, not a fixed split, make it exact on a loaded
// machine: a thread preempted inside a region is still in it.
func TestFromJitlogSplit(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	l, err := jitlog.Open(jitlog.Options{Dir: dir, Name: "pathtime-test"})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := l.CodeLoad(0x10000, 64, "loop_a", nil)
	b, _ := l.CodeLoad(0x10040, 64, "loop_b", nil)
	var minA, maxA, minB, maxB uint64
	for i := 0; i < 5; i++ {
		a0, a1 := call(func() { l.Enter(1, a) })
		spin(4 * time.Millisecond)
		b0, b1 := call(func() { l.Enter(1, b) }) // a JUMP: implicit exit from loop_a
		spin(12 * time.Millisecond)
		e0, e1 := call(func() { l.Exit(1) })
		spin(2 * time.Millisecond) // interpreter time, in no region
		minA, maxA = minA+(b0-a1), maxA+(b1-a0)
		minB, maxB = minB+(e0-b1), maxB+(e1-b0)
	}
	path := l.Path()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := jitlog.Read(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var events []pathtime.Event
	regions := map[uint64]pathtime.Region{}
	for _, r := range recs {
		if e, ok := pathtime.FromJitlog(r, regions); ok {
			events = append(events, e)
		}
	}
	if len(events) != 15 || regions[a].Name != "loop_a" || regions[b].Name != "loop_b" {
		t.Fatalf("%d events, regions %v", len(events), regions)
	}
	res, err := pathtime.Compute(events, pathtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint64]pathtime.Total{}
	for _, tot := range res.Totals {
		got[tot.Region] = tot
	}
	// The logger's clock may be the TSC converted to ns: allow it a
	// microsecond per stamp on each side.
	const slack = 10 * 1000
	if got[a].Time+slack < minA || got[a].Time > maxA+slack {
		t.Errorf("loop_a: %v, want between %v and %v", time.Duration(got[a].Time), time.Duration(minA), time.Duration(maxA))
	}
	if got[b].Time+slack < minB || got[b].Time > maxB+slack {
		t.Errorf("loop_b: %v, want between %v and %v", time.Duration(got[b].Time), time.Duration(minB), time.Duration(maxB))
	}
	if got[a].Entries != 5 || got[b].Entries != 5 {
		t.Errorf("entries %d / %d, want 5 / 5", got[a].Entries, got[b].Entries)
	}
	if res.Total != got[a].Time+got[b].Time {
		t.Errorf("total %d is not the sum of the regions", res.Total)
	}
}
