package perfdata_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/perfdata"
)

// recordBusy records the busy workload with perf, with callchains, and
// opens the file, which the test's end closes.
func recordBusy(t *testing.T) (string, *perfdata.File) {
	t.Helper()
	path := perftest.Record(t, "orig.data", "-e", "cpu-clock", "-g", "--", perftest.Busy(t), "100", "1")
	f, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return path, f
}

// eventTypes is what the copies carry in their event_types section, as
// jitprof carries its JIT data: more than a pipe-mode record holds, and
// not a multiple of 8 bytes.
var eventTypes = bytes.Repeat([]byte("event_types: perf must skip it "), 3000)[:90001]

// TestWriterCopyAcceptedByPerf rewrites a perf recording with our Writer,
// adding an event_types section, and checks perf reads the copy exactly
// as the original: same stats, same perf script, same report; and that
// perf inject, which dies on a feature bit it does not know, takes it.
func TestWriterCopyAcceptedByPerf(t *testing.T) {
	orig, f := recordBusy(t)
	copyPath := filepath.Join(t.TempDir(), "copy.data")
	copyFile(t, f, copyPath, eventTypes)

	perf := perftest.Perf(t)
	for _, args := range [][]string{
		{"script", "--force"},
		{"report", "--stdio", "--force", "-q", "--sort", "comm,dso,sym"},
		{"report", "--stdio", "--force", "-q", "--children", "--sort", "sym"},
	} {
		want := perftest.Run(t, perf, append(args, "-i", orig)...)
		got := perftest.Run(t, perf, append(args, "-i", copyPath)...)
		if want != got {
			t.Errorf("perf %s differs on our copy:\n%s", strings.Join(args, " "), diffLines(want, got))
		}
		if len(want) < 100 {
			t.Errorf("perf %s printed almost nothing: %q", strings.Join(args, " "), want)
		}
	}
	if !reflect.DeepEqual(perftest.Stats(t, orig), perftest.Stats(t, copyPath)) {
		t.Errorf("perf report --stats differs: %v vs %v", perftest.Stats(t, orig), perftest.Stats(t, copyPath))
	}
	hdr := perftest.Run(t, perf, "report", "--header-only", "--force", "-i", copyPath)
	if !strings.Contains(hdr, "cmdline") || !strings.Contains(hdr, "hostname") {
		t.Errorf("perf report --header-only on the copy lacks the features:\n%s", hdr)
	}
	injected := filepath.Join(t.TempDir(), "injected.data")
	perftest.Run(t, perf, "inject", "-i", copyPath, "-o", injected)
	if st := perftest.Stats(t, injected); st["SAMPLE"] != perftest.Stats(t, orig)["SAMPLE"] {
		t.Errorf("perf inject of the copy: %v", st)
	}

	// Round trip: read → write → read is lossless.
	g, err := perfdata.Open(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if !bytes.Equal(g.EventTypes, eventTypes) {
		t.Errorf("the event_types section reads back as %d bytes, want the %d written", len(g.EventTypes), len(eventTypes))
	}
	for _, feat := range f.Features.List() {
		a, _ := f.Features.Raw(feat)
		b, _ := g.Features.Raw(feat)
		if !bytes.Equal(a, b) {
			t.Errorf("feature %v changed in the round trip", feat)
		}
	}
	if len(f.Attrs) != len(g.Attrs) {
		t.Fatalf("%d attrs became %d", len(f.Attrs), len(g.Attrs))
	}
	for i := range f.Attrs {
		if !reflect.DeepEqual(f.Attrs[i], g.Attrs[i]) {
			t.Errorf("attr %d changed:\n%+v\n%+v", i, f.Attrs[i], g.Attrs[i])
		}
	}
	ra, rb := f.Records(), g.Records()
	n := 0
	for ra.Next() {
		if !rb.Next() {
			t.Fatalf("the copy ends after %d records: %v", n, rb.Err())
		}
		a, _ := perfdata.AppendRecord(nil, ra.Record())
		b, _ := perfdata.AppendRecord(nil, rb.Record())
		if !bytes.Equal(a, b) {
			t.Fatalf("record %d (%v) differs after the round trip", n, ra.Record().Type())
		}
		n++
	}
	if rb.Next() {
		t.Errorf("the copy has records past the original's %d", n)
	}
}

// TestWriterFromScratch synthesizes a recording of a process that never
// ran: a COMM, an MMAP2 of the busy binary, and samples at work_a and
// work_b. perf must read it and name the functions.
func TestWriterFromScratch(t *testing.T) {
	busy := perftest.Busy(t)
	syms := map[string]uint64{}
	for _, line := range strings.Split(perftest.Run(t, perftest.Need(t, "nm"), busy), "\n") {
		if fs := strings.Fields(line); len(fs) == 3 {
			v, _ := strconv.ParseUint(fs[0], 16, 64)
			syms[fs[2]] = v
		}
	}
	if syms["work_a"] == 0 || syms["work_b"] == 0 {
		t.Fatalf("nm found no work_a/work_b in %s", busy)
	}
	// The busy binary is PIE: map its first page at a base and its text
	// with the right file offset, as the loader would.
	const base = 0x555500000000
	attr := &perfdata.Attr{
		Type: perfdata.TypeSoftware, Config: 0, SamplePeriod: 1000000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod | perfdata.SampleID | perfdata.SampleCPU,
		Flags:      perfdata.FlagSampleIDAll | perfdata.FlagMmap | perfdata.FlagComm | perfdata.FlagMmap2 | perfdata.FlagTask,
		IDs:        []uint64{7},
	}
	path := filepath.Join(t.TempDir(), "scratch.data")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := perfdata.NewWriter(out, []*perfdata.Attr{attr})
	if err != nil {
		t.Fatal(err)
	}
	w.Features.SetString(perfdata.FeatHostname, "scratch")
	w.Features.SetString(perfdata.FeatOSRelease, "6.0.0")
	w.Features.SetString(perfdata.FeatArch, "x86_64")
	w.Features.SetNrCPUs(2, 2)
	w.Features.SetCmdline([]string{"jitprof", "test"})
	w.Features.SetEventDescs([]perfdata.EventDesc{{Attr: *attr, Name: "cpu-clock", IDs: attr.IDs}})
	common := func(tm uint64) perfdata.Common {
		return perfdata.Common{Attr: attr, PID: 4242, TID: 4242, Time: tm, ID: 7}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.WriteRecord(&perfdata.Comm{Common: common(1000), PID: 4242, TID: 4242, Comm: "scratchy"}))
	must(w.WriteRecord(&perfdata.Mmap{Common: common(1001), Version2: true, PID: 4242, TID: 4242,
		Addr: base, Len: 0x10000, Pgoff: 0, Prot: 5, Flags: 2, Filename: busy}))
	const na, nb = 300, 100
	tm := uint64(2000)
	for i := 0; i < na+nb; i++ {
		ip := base + syms["work_a"] + 4
		if i >= na {
			ip = base + syms["work_b"] + 4
		}
		tm += 1000
		s := &perfdata.Sample{Common: common(tm), IP: ip, Period: 1000000}
		s.Misc = perfdata.MiscUser
		must(w.WriteRecord(s))
	}
	must(w.Close())
	out.Close()

	script := perftest.Run(t, perftest.Perf(t), "script", "--force", "-i", path, "-F", "comm,pid,ip,sym")
	if got := strings.Count(script, "work_a"); got != na {
		t.Errorf("perf script names work_a %d times, want %d:\n%.500s", got, na, script)
	}
	if got := strings.Count(script, "work_b"); got != nb {
		t.Errorf("perf script names work_b %d times, want %d", got, nb)
	}
	if !strings.Contains(script, "scratchy") {
		t.Errorf("perf script does not show the comm: %.300s", script)
	}
	report := perftest.Run(t, perftest.Perf(t), "report", "--stdio", "--force", "-q", "-i", path, "--sort", "sym")
	if !strings.Contains(report, "75.00%") || !strings.Contains(report, "25.00%") {
		t.Errorf("perf report does not split 75/25:\n%s", report)
	}
	if st := perftest.Stats(t, path); st["SAMPLE"] != na+nb || st["MMAP2"] != 1 || st["COMM"] != 1 {
		t.Errorf("perf report --stats: %v", st)
	}
}

func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	shown := 0
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y && shown < 10 {
			shown++
			out.WriteString("- " + x + "\n+ " + y + "\n")
		}
	}
	return out.String()
}

// TestWriterKilled leaves a Writer unclosed after a Flush, as a killed
// recorder does: both readers read the flushed records.
func TestWriterKilled(t *testing.T) {
	perftest.Perf(t)
	a := &perfdata.Attr{Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod,
		Flags:      perfdata.FlagSampleIDAll | perfdata.FlagComm, IDs: []uint64{1}}
	path := filepath.Join(t.TempDir(), "killed.data")
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
	for i := 0; i < 100; i++ {
		c.Time = uint64(i)
		w.WriteRecord(&perfdata.Sample{Common: c, IP: 0x1000, Period: 1000})
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	// Records after the last Flush are lost with the writer.
	w.WriteRecord(&perfdata.Sample{Common: c, IP: 0x2000, Period: 1000})

	pf, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	n := 0
	r := pf.Records()
	for r.Next() {
		n++
	}
	if r.Err() != nil || n != 101 {
		t.Errorf("read %d records (err %v), want the 101 flushed", n, r.Err())
	}
	if st := perftest.Stats(t, path); st["SAMPLE"] != 100 || st["COMM"] != 1 {
		t.Errorf("perf report --stats on an unclosed file: %v", st)
	}
}

// TestPipeWriterAcceptedByPerf rewrites a perf recording as a pipe-mode
// stream with NewPipeWriter: perf reading it from standard input must
// print what it prints for the original, and NewStream must read back
// its records and features.
func TestPipeWriterAcceptedByPerf(t *testing.T) {
	orig, f := recordBusy(t)
	stream := filepath.Join(t.TempDir(), "stream.data")
	copyTo(t, f, stream, eventTypes, true)

	// perf reads a stream with less known up front than a file (its
	// report, for one, has no children column unless told), so what it
	// prints of ours must be what it prints of its own stream of the
	// same file, which perf inject -o - makes.
	perf := perftest.Perf(t)
	for _, args := range []string{
		"script --force",
		"report --stdio --force -q --sort comm,dso,sym",
		"report --stdio --force -q --children --sort sym",
	} {
		want := perftest.Run(t, "sh", "-c", perf+" inject -i "+orig+" -o - | "+perf+" "+args+" -i -")
		got := perftest.Run(t, "sh", "-c", perf+" "+args+" -i - < "+stream)
		if want != got {
			t.Errorf("perf %s differs on our stream:\n%s", args, diffLines(want, got))
		}
		if len(want) < 100 {
			t.Errorf("perf %s printed almost nothing: %q", args, want)
		}
	}

	in, err := os.Open(stream)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	g, err := perfdata.NewStream(in)
	if err != nil {
		t.Fatal(err)
	}
	var recs []string
	for r := g.Records(); r.Next(); {
		switch r.Record().Type() {
		case perfdata.RecordHeaderAttr, perfdata.RecordHeaderFeature, perfdata.RecordHeaderBuildID, perfdata.RecordHeaderEventType:
			continue // the file keeps these in its header
		}
		b, _ := perfdata.AppendRecord(nil, r.Record())
		recs = append(recs, string(b))
	}
	var want []string
	for r := f.Records(); r.Next(); {
		b, _ := perfdata.AppendRecord(nil, r.Record())
		want = append(want, string(b))
	}
	if !reflect.DeepEqual(recs, want) {
		t.Errorf("the stream reads back %d records, the file has %d, or they differ", len(recs), len(want))
	}
	if !reflect.DeepEqual(g.Attrs, f.Attrs) {
		t.Errorf("attrs read back %+v, want %+v", g.Attrs, f.Attrs)
	}
	// Padded with zeros to whole 8-byte words.
	if pad := -len(eventTypes) & 7; !bytes.Equal(g.EventTypes, append(bytes.Clone(eventTypes), make([]byte, pad)...)) {
		t.Errorf("event types read back as %d bytes, want the %d written and %d of padding", len(g.EventTypes), len(eventTypes), pad)
	}
	for _, feat := range f.Features.List() {
		a, _ := f.Features.Raw(feat)
		b, _ := g.Features.Raw(feat)
		if feat == perfdata.FeatBuildID {
			// Sent as a record per image, re-encoded: the same list.
			want, err1 := f.Features.BuildIDs()
			got, err2 := g.Features.BuildIDs()
			if err1 != nil || err2 != nil || len(want) == 0 || !reflect.DeepEqual(got, want) {
				t.Errorf("build-ids read back %+v (%v), want %+v (%v)", got, err2, want, err1)
			}
			continue
		}
		if !bytes.Equal(a, b) {
			t.Errorf("feature %v: %d bytes read back, want %d", feat, len(b), len(a))
		}
	}
}

// TestPipeWriterRoundTrip writes every record type and some features,
// tracepoint formats and build-ids among them, as a stream and reads
// it back with NewStream.
func TestPipeWriterRoundTrip(t *testing.T) {
	f := chunkFile(t)
	var buf bytes.Buffer
	w, err := perfdata.NewPipeWriter(&buf, f.Attrs)
	if err != nil {
		t.Fatal(err)
	}
	td := &perfdata.TracingData{Version: "0.6", LongSize: 8, PageSize: 4096, HeaderPage: []byte("page"), HeaderEvent: []byte("event"),
		Systems: []perfdata.TraceSystem{{Name: "sched", Formats: [][]byte{[]byte("name: sched_switch\n")}}}}
	w.Features.SetTracingData(td) // before the records: perf needs it first
	w.Features.SetString(perfdata.FeatHostname, "host")
	// The stream's own header records are told apart from those in
	// the data (the file has some of every type) by position: skipped.
	header := func(typ perfdata.RecordType) bool {
		return typ == perfdata.RecordHeaderAttr || typ == perfdata.RecordHeaderFeature || typ == perfdata.RecordHeaderBuildID
	}
	var want []string
	for r := f.Records(); r.Next(); {
		if err := w.WriteRecord(r.Record()); err != nil {
			t.Fatal(err)
		}
		if !header(r.Record().Type()) {
			b, _ := perfdata.AppendRecord(nil, r.Record())
			want = append(want, string(b))
		}
	}
	ids := []perfdata.BuildID{{PID: -1, ID: bytes.Repeat([]byte{0xab}, 20), Filename: "/bin/true"}}
	w.Features.SetBuildIDs(ids) // after them: they come at Close
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	g, err := perfdata.NewStream(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	firstData := -1
	for r := g.Records(); r.Next(); {
		switch typ := r.Record().Type(); {
		case header(typ):
			continue
		case typ == perfdata.RecordTracingData:
			if firstData >= 0 {
				t.Error("the tracing data comes after a data record")
			}
			continue
		}
		if firstData < 0 {
			firstData = len(got)
		}
		b, _ := perfdata.AppendRecord(nil, r.Record())
		got = append(got, string(b))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back %d records, wrote %d, or they differ", len(got), len(want))
	}
	if gt, err := g.Features.TracingData(); err != nil || !reflect.DeepEqual(gt, td) {
		t.Errorf("tracing data read back %+v (%v), want %+v", gt, err, td)
	}
	if h, err := g.Features.String(perfdata.FeatHostname); h != "host" {
		t.Errorf("hostname %q (%v)", h, err)
	}
	// The file's own BUILD_ID records come first in the list.
	if gi, err := g.Features.BuildIDs(); err != nil || len(gi) == 0 || gi[len(gi)-1].Filename != "/bin/true" || !bytes.Equal(gi[len(gi)-1].ID, ids[0].ID) {
		t.Errorf("build-ids read back end %+v (%v), want %+v", gi[max(0, len(gi)-1):], err, ids)
	}
}

// TestEventTypesFrom: an event_types section streamed at Close reads
// back as the bytes streamed, from a file and from a stream, and Size is
// what was written.
func TestEventTypesFrom(t *testing.T) {
	a := &perfdata.Attr{Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod,
		Flags:      perfdata.FlagSampleIDAll | perfdata.FlagComm, IDs: []uint64{1}}
	stream := func(w io.Writer) error {
		for b := eventTypes; len(b) > 0; b = b[min(len(b), 1000):] {
			if _, err := w.Write(b[:min(len(b), 1000)]); err != nil {
				return err
			}
		}
		return nil
	}
	c := perfdata.Common{Attr: a, PID: 1, TID: 1}
	path := filepath.Join(t.TempDir(), "streamed.data")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := perfdata.NewWriter(f, []*perfdata.Attr{a})
	if err != nil {
		t.Fatal(err)
	}
	w.WriteRecord(&perfdata.Sample{Common: c, IP: 0x1000, Period: 1000})
	w.EventTypesFrom = stream
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	if w.Size() != fi.Size() {
		t.Errorf("Size %d, the file has %d bytes", w.Size(), fi.Size())
	}
	g, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if !bytes.Equal(g.EventTypes, eventTypes) {
		t.Errorf("a file's streamed event types read back as %d bytes, want the %d written", len(g.EventTypes), len(eventTypes))
	}

	var buf bytes.Buffer
	w, err = perfdata.NewPipeWriter(&buf, []*perfdata.Attr{a})
	if err != nil {
		t.Fatal(err)
	}
	w.WriteRecord(&perfdata.Sample{Common: c, IP: 0x1000, Period: 1000})
	w.EventTypesFrom = stream
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Size() != int64(buf.Len()) {
		t.Errorf("Size %d, the stream has %d bytes", w.Size(), buf.Len())
	}
	s, err := perfdata.NewStream(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for r := s.Records(); r.Next(); {
	}
	// A stream pads its last record to 8 bytes.
	if !bytes.Equal(bytes.TrimRight(s.EventTypes, "\x00"), bytes.TrimRight(eventTypes, "\x00")) {
		t.Errorf("a stream's event types read back as %d bytes, want the %d written", len(s.EventTypes), len(eventTypes))
	}
}
