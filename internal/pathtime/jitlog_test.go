package pathtime_test

import (
	"math"
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

// spin stays in the region until the monotonic clock, the logger's own,
// has moved d: the split is exact by that clock however loaded the
// machine is, because preemption inside the region is time in it.
func spin(d time.Duration) {
	for end := monotonic() + uint64(d); monotonic() < end; {
	}
}

func TestFromJitlogSplit(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	l, err := jitlog.Open(jitlog.Options{Dir: dir, Name: "pathtime-test"})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := l.CodeLoad(0x10000, 64, "loop_a", nil)
	b, _ := l.CodeLoad(0x10040, 64, "loop_b", nil)
	for i := 0; i < 5; i++ {
		l.Enter(1, a)
		spin(4 * time.Millisecond)
		l.Enter(1, b) // a JUMP: implicit exit from loop_a
		spin(12 * time.Millisecond)
		l.Exit(1)
		spin(2 * time.Millisecond) // interpreter time, in no region
	}
	path := l.Path()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := jitlog.Read(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	events, regions := pathtime.FromJitlog(recs)
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
	// Each region's time is at least what it spun and the split is 1:3;
	// only the logging calls themselves (well under a millisecond in all)
	// can add to it.
	if math.Abs(got[a].Percent-25) > 2 || math.Abs(got[b].Percent-75) > 2 {
		t.Errorf("split %.2f%% / %.2f%%, want 25 / 75", got[a].Percent, got[b].Percent)
	}
	if got[a].Time < uint64(20*time.Millisecond) || got[b].Time < uint64(60*time.Millisecond) {
		t.Errorf("times %v / %v, want at least 20 ms / 60 ms", time.Duration(got[a].Time), time.Duration(got[b].Time))
	}
	if got[a].Entries != 5 || got[b].Entries != 5 {
		t.Errorf("entries %d / %d, want 5 / 5", got[a].Entries, got[b].Entries)
	}
}
