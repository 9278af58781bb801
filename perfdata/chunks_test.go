package perfdata_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/perfdata"
)

// chunkFile writes every record type many times over and opens the file.
func chunkFile(t *testing.T) *perfdata.File {
	a := fullAttr()
	var recs []perfdata.Record
	for range 50 {
		recs = append(recs, allRecords(a)...)
	}
	return perftest.OpenData(t, []*perfdata.Attr{a}, recs)
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

// checkResync checks Resync and RecordsUntil against the records f
// holds: from every 8-byte-aligned offset (or a spread of them in a big
// file) Resync finds the next record, or with exact unset (a file of
// records Resync does not take, like the unknown ones) a later record;
// and a reader stopped at any offset stops at the first record at or
// after it.
func checkResync(t *testing.T, f *perfdata.File, exact bool) {
	t.Helper()
	var offs []int64
	for r := f.Records(); r.Next(); {
		offs = append(offs, r.Offset())
	}
	end := f.DataOffset + f.DataSize
	step := int64(8)
	if f.DataSize > 1<<20 {
		step *= 37 // a prime, so the offsets fall everywhere in records
	}
	bad := 0
	for o := f.DataOffset; o < end && bad < 5; o += step {
		i, _ := slices.BinarySearch(offs, o)
		got, ok := f.Resync(o, end)
		switch {
		case i == len(offs) && ok:
			t.Errorf("Resync(%d) found a record at %d after the last one", o, got)
			bad++
		case i < len(offs) && exact && (!ok || got != offs[i]):
			t.Errorf("Resync(%d) = %d, %v; the next record is at %d", o, got, ok, offs[i])
			bad++
		case ok && !slices.Contains(offs[i:], got):
			t.Errorf("Resync(%d) = %d, %v; the next record is at %d", o, got, ok, offs[i])
			bad++
		}
	}
	for _, k := range []int{0, len(offs) / 3, len(offs) - 1} {
		for _, stop := range []int64{offs[k], offs[k] + 1, (offs[k] + end) / 2, end} {
			r := f.RecordsUntil(offs[k], stop)
			n := 0
			for r.Next() {
				n++
			}
			i, _ := slices.BinarySearch(offs, stop)
			want := end
			if i < len(offs) {
				want = offs[i]
			}
			if r.Err() != nil || r.NextOffset() != want || n != i-k {
				t.Errorf("RecordsUntil(%d, %d) read %d records to %d (%v); want %d to %d", offs[k], stop, n, r.NextOffset(), r.Err(), i-k, want)
			}
		}
	}
}

// checkFixedFields reads f with and without FixedSampleFields: the
// same records, and of each sample the same fixed fields.
func checkFixedFields(t *testing.T, f *perfdata.File) {
	t.Helper()
	full, fixed := f.Records(), f.Records()
	fixed.FixedSampleFields = true
	n := 0
	for full.Next() {
		if !fixed.Next() {
			t.Fatalf("with FixedSampleFields the reader stops at %d: %v", full.Offset(), fixed.Err())
		}
		s, ok := full.Record().(*perfdata.Sample)
		if !ok {
			if fixed.Offset() != full.Offset() || fixed.Record().Type() != full.Record().Type() {
				t.Fatalf("with FixedSampleFields, %v at %d; without, %v at %d", fixed.Record().Type(), fixed.Offset(), full.Record().Type(), full.Offset())
			}
			continue
		}
		g, ok := fixed.Record().(*perfdata.Sample)
		if !ok {
			t.Fatalf("with FixedSampleFields, %v at %d; without, a sample", fixed.Record().Type(), fixed.Offset())
		}
		want := perfdata.Sample{Common: s.Common, IP: s.IP, Addr: s.Addr, Period: s.Period}
		if !reflect.DeepEqual(*g, want) {
			t.Fatalf("sample at %d with FixedSampleFields:\n%+v\nwant\n%+v", s.Offset, *g, want)
		}
		n++
	}
	if fixed.Next() || full.Err() != nil || fixed.Err() != nil {
		t.Fatalf("the readers end differently: %v, %v", full.Err(), fixed.Err())
	}
	if n == 0 {
		t.Fatal("no sample to compare")
	}
}

func TestResync(t *testing.T) {
	f := chunkFile(t)
	checkResync(t, f, false)
	if _, ok := f.Resync(f.DataOffset+f.DataSize-8, f.DataOffset+f.DataSize); ok {
		t.Error("Resync found a record in the last 8 bytes, inside the last record")
	}
}

func TestFixedSampleFields(t *testing.T) { checkFixedFields(t, chunkFile(t)) }
