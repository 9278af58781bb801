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

func TestChunksReadAsRecords(t *testing.T) {
	f := chunkFile(t)
	all := f.Records()
	want := records(t, all, all.Next)
	for _, n := range []int{1, 2, 3, 7, 100000} {
		chunks := f.Chunks(n)
		if len(chunks) == 0 || len(chunks) > n {
			t.Fatalf("Chunks(%d) gave %d chunks", n, len(chunks))
		}
		if chunks[0].Start != f.DataOffset || chunks[len(chunks)-1].End != f.DataOffset+f.DataSize {
			t.Errorf("Chunks(%d) = %v, do not cover the data section at %d+%d", n, chunks, f.DataOffset, f.DataSize)
		}
		var got []string
		for i, c := range chunks {
			if i > 0 && c.Start != chunks[i-1].End {
				t.Fatalf("Chunks(%d): chunk %d starts at %d, not where chunk %d ends (%d)", n, i, c.Start, i-1, chunks[i-1].End)
			}
			r := f.RecordsIn(c)
			got = append(got, records(t, r, r.Next)...)
			f.Release(c) // reading again after a release must see the same bytes
		}
		if !slices.Equal(got, want) {
			t.Errorf("Chunks(%d): the chunks read %d records, not the %d Records reads, or other ones", n, len(got), len(want))
		}
	}
	if n := len(f.Chunks(7)); n != 7 {
		t.Errorf("Chunks(7) of %d records gave %d chunks", len(want), n)
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
