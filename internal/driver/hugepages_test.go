package driver

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/jitprof/jitprof/perfdata"
)

// TestHugePagesForBigRecordings: opening a recording of bigRecording or
// more asks for huge pages (hugepages.Heap, seen as the one collection it
// runs); a smaller one does not, since there the collection costs more
// than huge pages save.
func TestHugePagesForBigRecordings(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no collection but Heap's
	a := &perfdata.Attr{Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod,
		Flags:      perfdata.FlagSampleIDAll | perfdata.FlagComm, IDs: []uint64{1}}
	write := func(name string, samples int) string {
		path := filepath.Join(t.TempDir(), name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w, err := perfdata.NewWriter(f, []*perfdata.Attr{a})
		if err != nil {
			t.Fatal(err)
		}
		c := perfdata.Common{Attr: a, PID: 1, TID: 1}
		w.WriteRecord(&perfdata.Comm{Common: c, PID: 1, TID: 1, Comm: "x"})
		for i := range samples {
			c.Time = uint64(i)
			w.WriteRecord(&perfdata.Sample{Common: c, IP: 0x1000, Period: 1000})
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// A sample is 40 bytes: IP, TID, time and period and a header.
	for _, c := range []struct {
		name    string
		samples int
		gcs     uint32
	}{{"small.data", 1000, 0}, {"big.data", bigRecording/40 + 1, 1}} {
		path := write(c.name, c.samples)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := OpenRecording(path, false)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		size := r.File().DataSize
		r.Close()
		if n := after.NumGC - before.NumGC; n != c.gcs {
			t.Errorf("%s (%d bytes of data): %d collections on opening, want %d", c.name, size, n, c.gcs)
		}
	}
}
