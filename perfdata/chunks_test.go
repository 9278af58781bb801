package perfdata_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jitprof/jitprof/perfdata"
)

// chunkFile writes every record type many times over and opens the file.
func chunkFile(t *testing.T) *perfdata.File {
	a := fullAttr()
	path := filepath.Join(t.TempDir(), "chunks.data")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := perfdata.NewWriter(out, []*perfdata.Attr{a})
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		for _, r := range allRecords(a) {
			if err := w.WriteRecord(r); err != nil {
				t.Fatalf("writing %v: %v", r.Type(), err)
			}
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

// records lists what r reads: type, offset and encoding of each record.
func records(t *testing.T, r *perfdata.Reader, next func() bool) []string {
	t.Helper()
	var out []string
	for next() {
		rec := r.Record()
		out = append(out, fmt.Sprintf("%v@%d:%x", rec.Type(), r.Offset(), normalize(rec)))
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRecordsInReadsAsRecords(t *testing.T) {
	f := chunkFile(t)
	all := f.Records()
	want := records(t, all, all.Next)
	var offs []int64
	for r := f.Records(); r.Next(); {
		offs = append(offs, r.Offset())
	}
	for _, n := range []int{1, 2, 3, 7, len(offs)} {
		var got []string
		start := f.DataOffset
		for i := 1; i <= n; i++ {
			end := f.DataOffset + f.DataSize
			if i < n {
				end = offs[i*len(offs)/n]
			}
			c := perfdata.Chunk{Start: start, End: end}
			r := f.RecordsIn(c)
			got = append(got, records(t, r, r.Next)...)
			f.Release(c) // reading again after a release must see the same bytes
			start = end
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d chunks read %d records, not the %d Records reads, or other ones", n, len(got), len(want))
		}
	}
	r := f.Records()
	if got := records(t, r, r.Next); !slices.Equal(got, want) {
		t.Errorf("after Release, Records reads %d records, not the %d it read before, or other ones", len(got), len(want))
	}
}

func TestNextNonSample(t *testing.T) {
	f := chunkFile(t)
	all := f.Records()
	var want []string
	for _, s := range records(t, all, all.Next) {
		if s[:len("SAMPLE@")] != "SAMPLE@" {
			want = append(want, s)
		}
	}
	r := f.Records()
	got := records(t, r, r.NextNonSample)
	if !slices.Equal(got, want) {
		t.Errorf("NextNonSample read %d records, want the %d non-samples", len(got), len(want))
	}
	if r.Count(perfdata.RecordSample) != all.Count(perfdata.RecordSample) {
		t.Errorf("NextNonSample counted %d samples, Next %d", r.Count(perfdata.RecordSample), all.Count(perfdata.RecordSample))
	}
}

func TestRecordsInBadChunk(t *testing.T) {
	f := chunkFile(t)
	for _, c := range []perfdata.Chunk{{0, 8}, {f.DataOffset, f.DataOffset + f.DataSize + 1}, {f.DataOffset + 16, f.DataOffset}} {
		r := f.RecordsIn(c)
		if r.Next() || r.Err() == nil {
			t.Errorf("RecordsIn(%v) read without an error", c)
		}
	}
}
