package driver

import (
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/perfdata"
)

// TestHugePagesForBigRecordings: opening a recording of bigRecording or
// more asks for huge pages (hugepages.Heap); a smaller one does not,
// since there the collection Heap runs costs more than huge pages save.
func TestHugePagesForBigRecordings(t *testing.T) {
	defer func(f func(int) bool) { adviseHeap = f }(adviseHeap)
	asked, size := 0, 0
	adviseHeap = func(n int) bool { asked, size = asked+1, n; return true }
	a := &perfdata.Attr{Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod,
		Flags:      perfdata.FlagSampleIDAll | perfdata.FlagComm, IDs: []uint64{1}}
	c := perfdata.Common{Attr: a, PID: 1, TID: 1}
	s := &perfdata.Sample{Common: c, IP: 0x1000, Period: 1000}
	// A sample is 40 bytes: a header, IP, TID, time and period.
	for _, c := range []struct {
		name    string
		samples int
		asks    int
	}{{"small", 1000, 0}, {"big", bigRecording/40 + 1, 1}} {
		recs := []perfdata.Record{&perfdata.Comm{Common: s.Common, PID: 1, TID: 1, Comm: "x"}}
		for range c.samples {
			recs = append(recs, s)
		}
		asked = 0
		r, err := OpenRecording(perftest.WriteData(t, []*perfdata.Attr{a}, recs, nil), false)
		if err != nil {
			t.Fatal(err)
		}
		dataSize := r.File().DataSize
		r.Close()
		if asked != c.asks {
			t.Errorf("%s (%d bytes of data): huge pages asked for %d times on opening, want %d", c.name, dataSize, asked, c.asks)
		}
		if c.asks > 0 && size != 32<<20 {
			t.Errorf("%s (%d bytes of data): huge pages asked for %d bytes of heap, want 32 MiB", c.name, dataSize, size)
		}
	}
}

// TestHeapBlock: the heap advised is half the data, within 32 and 256
// MiB, and the most for a stream.
func TestHeapBlock(t *testing.T) {
	for _, c := range []struct {
		data int64
		pipe bool
		want int
	}{{4 << 20, false, 32 << 20}, {195 << 20, false, 195 << 19}, {1 << 30, false, 256 << 20}, {0, true, 256 << 20}} {
		if got := heapBlock(&perfdata.File{DataSize: c.data, Pipe: c.pipe}); got != c.want {
			t.Errorf("%d bytes of data (stream %v): %d, want %d", c.data, c.pipe, got, c.want)
		}
	}
}
