package perfdata_test

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/perfdata"
)

// pipeStream writes the records of chunkFile as a pipe-mode stream, with
// a feature before them and build-ids after them.
func pipeStream(t *testing.T) []byte {
	t.Helper()
	f := chunkFile(t)
	var buf bytes.Buffer
	w, err := perfdata.NewPipeWriter(&buf, f.Attrs)
	if err != nil {
		t.Fatal(err)
	}
	w.Features.SetString(perfdata.FeatHostname, "host")
	for r := f.Records(); r.Next(); {
		if err := w.WriteRecord(r.Record()); err != nil {
			t.Fatal(err)
		}
	}
	w.Features.SetBuildIDs([]perfdata.BuildID{{PID: -1, ID: bytes.Repeat([]byte{0xab}, 20), Filename: "/bin/true"}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestPipeLayout reads a pipe-mode stream saved to a file as a file: the
// same records, attrs and features as the stream gives, its offsets
// shifted by the header, and readable in parts.
func TestPipeLayout(t *testing.T) {
	data := pipeStream(t)
	s, err := perfdata.NewStream(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	sr := s.Records()
	want := records(t, sr, sr.Next)

	f, err := perfdata.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if !f.PipeLayout || f.Pipe || f.DataOffset != 16 || f.DataSize != int64(len(data)-16) {
		t.Fatalf("PipeLayout %v, Pipe %v, data at %d size %d; want a file's data from 16 to the end (%d)", f.PipeLayout, f.Pipe, f.DataOffset, f.DataSize, len(data))
	}
	if !reflect.DeepEqual(f.Attrs, s.Attrs) {
		t.Errorf("attrs %+v, the stream's %+v", f.Attrs, s.Attrs)
	}
	for _, feat := range s.Features.List() {
		a, _ := s.Features.Raw(feat)
		if b, ok := f.Features.Raw(feat); !ok || !bytes.Equal(a, b) {
			t.Errorf("feature %v: %d bytes, the stream's %d", feat, len(b), len(a))
		}
	}
	if ids, err := f.Features.BuildIDs(); err != nil || len(ids) == 0 || ids[len(ids)-1].Filename != "/bin/true" {
		t.Errorf("build-ids written after the records: %+v, %v", ids, err)
	}
	// perf counts a stream's offsets from the end of its header; a
	// file's are of the file.
	all := f.Records()
	got := records(t, all, all.Next)
	if len(got) != len(want) {
		t.Fatalf("%d records, the stream's %d", len(got), len(want))
	}
	var offs []int64
	for r := f.Records(); r.Next(); {
		offs = append(offs, r.Offset())
	}
	for i := range got {
		if stripOffset(got[i]) != stripOffset(want[i]) || offs[i] != 16+streamOffset(t, want[i]) {
			t.Fatalf("record %d: %s, the stream's %s", i, got[i], want[i])
		}
	}
	// Two parts read as one.
	mid := offs[len(offs)/2]
	a := f.RecordsIn(perfdata.Chunk{Start: f.DataOffset, End: mid})
	b := f.RecordsIn(perfdata.Chunk{Start: mid, End: f.DataOffset + f.DataSize})
	if parts := append(records(t, a, a.Next), records(t, b, b.Next)...); !reflect.DeepEqual(parts, got) {
		t.Errorf("read in two parts: %d records, in one %d", len(parts), len(got))
	}
	if off, ok := f.Resync(mid-7, f.DataOffset+f.DataSize); !ok || off != mid {
		t.Errorf("Resync from just before a record at %d: %d, %v", mid, off, ok)
	}
	if attrs := len(f.Attrs); attrs != len(s.Attrs) {
		t.Errorf("reading again changed the attrs: %d, want %d", attrs, len(s.Attrs))
	}

	// A cut file (perf record -o - > FILE, killed) reads to its last
	// whole record, with a warning.
	last := offs[len(offs)-1]
	cut, err := perfdata.Parse(data[:last+3])
	if err != nil {
		t.Fatal(err)
	}
	if cut.DataSize != last-16 || len(cut.Warnings()) != 1 {
		t.Errorf("cut at %d: data size %d, warnings %q; want %d and one warning", last+3, cut.DataSize, cut.Warnings(), last-16)
	}
	r := cut.Records()
	if n := len(records(t, r, r.Next)); n != len(got)-1 {
		t.Errorf("cut file: %d records, want %d", n, len(got)-1)
	}
}

// stripOffset drops the offset from a line of records.
func stripOffset(rec string) string {
	typ, rest, _ := strings.Cut(rec, "@")
	_, enc, _ := strings.Cut(rest, ":")
	return typ + ":" + enc
}

// streamOffset is the offset in a line of records.
func streamOffset(t *testing.T, rec string) int64 {
	_, rest, _ := strings.Cut(rec, "@")
	off, _, _ := strings.Cut(rest, ":")
	n, err := strconv.ParseInt(off, 10, 64)
	if err != nil {
		t.Fatalf("record %q: %v", rec, err)
	}
	return n
}
