package driver

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/perfdata"
)

// TestWallClock: a recording with perf's CLOCK_DATA ties its clock to
// wall time by it; one without, by its last sample at the file's last
// write.
func TestWallClock(t *testing.T) {
	a := &perfdata.Attr{Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod,
		Flags:      perfdata.FlagSampleIDAll | perfdata.FlagComm, IDs: []uint64{1}}
	c := perfdata.Common{Attr: a, PID: 1, TID: 1, Time: 5_000}
	recs := []perfdata.Record{&perfdata.Comm{Common: c, PID: 1, TID: 1, Comm: "x"}}
	for i := range 3 {
		c.Time = uint64(5_000 + 1_000*i)
		recs = append(recs, &perfdata.Sample{Common: c, IP: 0x1000, Period: 1000})
	}
	for _, clock := range []bool{true, false} {
		var features func(*perfdata.Features)
		if clock {
			features = func(fs *perfdata.Features) {
				fs.SetClockData(perfdata.ClockData{Version: 1, ClockID: 1, WallNS: 1_700_000_000_000_000_000, ClockNS: 4_000})
			}
		}
		path := perftest.WriteData(t, []*perfdata.Attr{a}, recs, features)
		modified := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
		if err := os.Chtimes(path, modified, modified); err != nil {
			t.Fatal(err)
		}
		src, err := OpenRecording(path, false)
		if err != nil {
			t.Fatal(err)
		}
		l, err := Load(context.Background(), src, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := uint64(modified.UnixNano()) // the last sample's, at 7000
		if clock {
			want = 1_700_000_000_000_000_000 + 3_000
		}
		if got, ok := l.Profile.WallTime(7_000); !ok || got != want {
			t.Errorf("CLOCK_DATA %v: the last sample at %d (%v), want %d", clock, got, ok, want)
		}
		l.Close()
	}
}
