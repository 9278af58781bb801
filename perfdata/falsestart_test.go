package perfdata_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/jitprof/jitprof/perfdata"
)

// falseStartFile writes a recording whose middle record is a sample
// with nearly 64 KiB of raw data made of FINISHED_ROUND records, each at
// an offset a record could start at, between two runs of small samples.
func falseStartFile(t testing.TB) *perfdata.File {
	a := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod | perfdata.SampleRaw,
		Flags:      perfdata.FlagSampleIDAll,
		IDs:        []uint64{1},
	}
	path := filepath.Join(t.TempDir(), "falsestart.data")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := perfdata.NewWriter(out, []*perfdata.Attr{a})
	if err != nil {
		t.Fatal(err)
	}
	small := func(i int) *perfdata.Sample {
		return &perfdata.Sample{Common: perfdata.Common{Attr: a, Misc: perfdata.MiscUser, PID: 7, TID: 7, Time: uint64(i)},
			IP: 0x401000 + uint64(i%16), Period: 1000, Raw: []byte{1, 2, 3, 4}}
	}
	// The raw data follows the sample's 8-byte header, four u64 fields
	// and its u32 size: 4 bytes on, 8-byte alignment falls.
	round := []byte{byte(perfdata.RecordFinishedRound), 0, 0, 0, 0, 0, 8, 0}
	raw := append([]byte{0, 0, 0, 0}, bytes.Repeat(round, 8100)...)
	big := &perfdata.Sample{Common: perfdata.Common{Attr: a, Misc: perfdata.MiscUser, PID: 7, TID: 7, Time: 5000},
		IP: 0x402000, Period: 1000, Raw: raw}
	var recs []perfdata.Record
	for i := range 1500 {
		recs = append(recs, small(i))
	}
	recs = append(recs, big)
	for i := range 1500 {
		recs = append(recs, small(6000+i))
	}
	for _, r := range recs {
		if err := w.WriteRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out.Close()
	f, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
