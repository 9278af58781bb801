package record

import (
	"runtime"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/jitbundle"
)

// TestTSCEntries: the calibration spans the recording, one entry per JIT
// process, and its two pairs give a TSC's rate.
func TestTSCEntries(t *testing.T) {
	c := startTSC()
	if runtime.GOARCH != "amd64" {
		if c.ok || c.entries([]uint32{1}) != nil {
			t.Error("a calibration without a TSC")
		}
		return
	}
	time.Sleep(20 * time.Millisecond)
	es := c.entries([]uint32{10, 20})
	if len(es) != 2 || es[0].PID != 10 || es[1].PID != 20 || es[0].Kind != jitbundle.KindTSC || es[0].Path != jitbundle.TSCPath {
		t.Fatalf("entries %+v", es)
	}
	pairs, err := jitbundle.DecodeTSC(es[1].Data)
	if err != nil || len(pairs) != 2 {
		t.Fatalf("pairs %v, %v", pairs, err)
	}
	a, b := pairs[0], pairs[1]
	if b.Nanos-a.Nanos < uint64(20*time.Millisecond) || b.TSC <= a.TSC {
		t.Fatalf("pairs %+v do not span the 20 ms between them", pairs)
	}
	if rate := float64(b.Nanos-a.Nanos) / float64(b.TSC-a.TSC); rate < 0.05 || rate > 5 {
		t.Errorf("%.4g ns per tick: no TSC runs at %.3g GHz", rate, 1/rate)
	}
	if c.entries(nil) != nil {
		t.Error("entries for no process")
	}
}
