package ingest

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/jitdump"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/perfdata"
)

// writeRecording writes a perf.data of process pid, which ran JIT code in
// an anonymous mapping at jitStart, with one sample at each (address,
// time) of samples, each in a round of its own (as the recorder drains
// its rings every 100 ms), and the JIT data files in the bundle.
func writeRecording(t testing.TB, pid uint32, samples [][2]uint64, files []jitbundle.Entry) *perfdata.File {
	t.Helper()
	attr := &perfdata.Attr{Type: perfdata.TypeSoftware, SamplePeriod: 1000, Name: "cpu-clock",
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod,
		Flags:      perfdata.FlagSampleIDAll | perfdata.FlagComm | perfdata.FlagMmap, IDs: []uint64{1}}
	path := filepath.Join(t.TempDir(), "perf.data")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := perfdata.NewWriter(f, []*perfdata.Attr{attr})
	if err != nil {
		t.Fatal(err)
	}
	c := perfdata.Common{Attr: attr, PID: pid, TID: pid, Misc: perfdata.MiscUser}
	w.WriteRecord(&perfdata.Comm{Common: c, PID: pid, TID: pid, Comm: "jit"})
	w.WriteRecord(&perfdata.Mmap{Common: c, PID: pid, TID: pid, Addr: jitStart, Len: jitLen, Filename: "//anon"})
	for _, s := range samples {
		c.Time = s[1]
		w.WriteRecord(&perfdata.Sample{Common: c, IP: s[0], Period: 1000})
		w.WriteRecord(&perfdata.FinishedRound{})
	}
	b, err := jitbundle.Encode(&jitbundle.Bundle{Processes: []jitbundle.Process{{PID: int(pid), NSPID: int(pid), UID: os.Geteuid(), GID: os.Getegid()}}, Files: files})
	if err != nil {
		t.Fatal(err)
	}
	w.EventTypes = b
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pf, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pf.Close() })
	return pf
}

// TestImportOneAddress: jitprof import of a recording that embeds a
// jitdump of 500,000 loads at one address, 10 µs apart (it did not
// finish in 120 s), keys each sample by the generation live at its time,
// as the daemon would have.
func TestImportOneAddress(t *testing.T) {
	const pid, n = 4242, 500_000
	dump, _ := jitdump.AppendHeader(nil, jitdump.Header{ByteOrder: binary.LittleEndian, Version: 1, ElfMach: 62, PID: pid})
	for i := range uint64(n) {
		dump, _ = jitdump.AppendRecord(dump, binary.LittleEndian, &jitdump.CodeLoad{PID: pid, TID: pid, VMA: jitStart, CodeAddr: jitStart,
			CodeSize: 0x10, CodeIndex: i + 1, Name: "f", RecordHeader: jitdump.RecordHeader{Timestamp: 10_000 * (i + 1)}})
	}
	// Samples in generations 1, 250,000 and 500,000.
	f := writeRecording(t, pid, [][2]uint64{{jitStart + 4, 15_000}, {jitStart + 4, 10_000*250_000 + 5000}, {jitStart + 8, 10_000*n + 1}},
		[]jitbundle.Entry{{PID: pid, Kind: "jitdump", Path: "/tmp/jit-4242.dump", MTime: -1, Data: dump}})
	dir := t.TempDir()
	res, err := Import(f, dir, "", sampledb.SeparateNone)
	if err != nil {
		t.Fatal(err)
	}
	if res.Samples != 3 || res.JITProcesses != 1 {
		t.Errorf("imported %d samples, %d JIT processes; want 3, 1", res.Samples, res.JITProcesses)
	}
	spec, _ := sampledb.ParseSpec(nil)
	sel, err := sampledb.Select(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	got := map[[2]uint64]uint64{}
	for _, s := range sel.Files {
		r, err := sampledb.Open(dir, s)
		if err != nil {
			t.Fatal(err)
		}
		for e := range r.Entries() {
			got[[2]uint64{e.Key1, e.Key2}] += e.Count
		}
		r.Close()
	}
	want := map[[2]uint64]uint64{{4, 1}: 1, {4, 250_000}: 1, {8, n}: 1}
	for k, c := range want {
		if got[k] != c {
			t.Errorf("key (%#x, gen %d): %d samples, want %d (all: %v)", k[0], k[1], got[k], c, got)
		}
	}
	copied, err := os.ReadFile(filepath.Join(sampledb.JITDir(dir, sampledb.Current, pid), "data.jitdump"))
	if err != nil || len(copied) != len(dump) {
		t.Errorf("the session's copy of the dump: %d bytes, %v; want %d", len(copied), err, len(dump))
	}
}
