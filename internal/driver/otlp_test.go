package driver

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/jitprof/jitprof/internal/otlp"
	"github.com/jitprof/jitprof/internal/otlp/otlptest"
	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/perfdata"
)

// TestReportOTLP: report --format otlp and EncodeOTLP (push) write the
// same request, of every sample, each at its time.
func TestReportOTLP(t *testing.T) {
	a := &perfdata.Attr{Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod,
		Flags:      perfdata.FlagSampleIDAll | perfdata.FlagComm, IDs: []uint64{1}}
	c := perfdata.Common{Attr: a, PID: 7, TID: 7, Time: 100}
	recs := []perfdata.Record{&perfdata.Comm{Common: c, PID: 7, TID: 7, Comm: "app"}}
	for i := range 5 {
		c.Time = uint64(1_000 + i)
		recs = append(recs, &perfdata.Sample{Common: c, IP: 0x1000, Period: 1000})
	}
	path := perftest.WriteData(t, []*perfdata.Attr{a}, recs, nil)
	open := func() Source {
		src, err := OpenRecording(path, false)
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	var buf bytes.Buffer
	err := Report(context.Background(), open(), ReportOptions{Format: OTLP, OTLP: otlp.Options{Version: "v1"}},
		func() (io.WriteCloser, error) { return nopCloser{&buf}, nil })
	if err != nil {
		t.Fatal(err)
	}
	req, err := EncodeOTLP(context.Background(), open(), Options{}, otlp.Options{Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), req.Bytes) || req.Samples != 5 || req.Processes != 1 {
		t.Errorf("report wrote %d bytes, EncodeOTLP %d of %d samples of %d processes", buf.Len(), len(req.Bytes), req.Samples, req.Processes)
	}
	ss, err := otlptest.DecodeRequest(req.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	var times int
	for _, s := range ss {
		times += len(s.Times)
	}
	if len(ss) != 1 || times != 5 {
		t.Errorf("%d samples with %d times, want one of 5", len(ss), times)
	}
}
