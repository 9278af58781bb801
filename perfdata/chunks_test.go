package perfdata_test

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
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

// TestResyncGarbageFrame is what a system-wide recording of xz (its
// liblzma has no frame pointers) gave: a sample whose last callchain
// word, a garbage frame, reads as the header of an EXIT record whose
// size ends on the next sample's end, so that 16 records in a row
// decode from 8 bytes before a true boundary. An EXIT has one size in a
// file, and that one is not it.
func TestResyncGarbageFrame(t *testing.T) {
	a := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 250000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SampleCPU | perfdata.SamplePeriod | perfdata.SampleCallchain,
		Flags:      perfdata.FlagSampleIDAll | perfdata.FlagMmap2 | perfdata.FlagComm,
	}
	// Each sample is 8 (header) + 40 (ip, tid, time, cpu, period) + 8
	// (nr) + 32 (callchain) = 88 bytes; a fake record of 96 bytes from
	// the last word of one ends where the next sample ends.
	const fake = uint64(96)<<48 | uint64(perfdata.RecordExit)
	var recs []perfdata.Record
	for i := range 40 {
		recs = append(recs, &perfdata.Sample{
			Common: perfdata.Common{Attr: a, Misc: perfdata.MiscUser, PID: 28809, TID: 28809, Time: uint64(1000 + i), CPU: 1},
			IP:     0x7f62a477692b, Period: 250000,
			Callchain: []uint64{perfdata.CallchainUser, 0x7f62a477692b, 0x7f62a4770000, fake},
		})
	}
	f := perftest.OpenData(t, []*perfdata.Attr{a}, recs)
	checkResync(t, f, true)
}

// TestSequential checks that a Reader that copies the file (Sequential)
// reads what one of the mapping reads: whole, in ranges that stop
// anywhere, and jumping from record to record, across its buffer's
// refills (the file is a few times the buffer).
func TestSequential(t *testing.T) {
	a := fullAttr()
	var recs []perfdata.Record
	for range 2000 {
		recs = append(recs, allRecords(a)...)
	}
	f := perftest.OpenData(t, []*perfdata.Attr{a}, recs)
	if f.DataSize < 1<<20 {
		t.Fatalf("the file has %d bytes of records: too few to refill the buffer", f.DataSize)
	}
	all := f.Records()
	want := records(t, all, all.Next)
	seq := f.Records()
	seq.Sequential = true
	if got := records(t, seq, seq.Next); !slices.Equal(got, want) {
		t.Fatalf("a Sequential Reader read %d records, the mapping's %d, or other ones", len(got), len(want))
	}
	var offs []int64
	for r := f.Records(); r.Next(); {
		offs = append(offs, r.Offset())
	}
	end := f.DataOffset + f.DataSize
	for _, k := range []int{0, len(offs) / 3, len(offs) - 5} {
		for _, stop := range []int64{offs[k] + 1, (offs[k] + end) / 2, end} {
			m, s := f.RecordsUntil(offs[k], stop), f.RecordsUntil(offs[k], stop)
			s.Sequential = true
			if got, w := records(t, s, s.Next), records(t, m, m.Next); !slices.Equal(got, w) || s.NextOffset() != m.NextOffset() {
				t.Errorf("RecordsUntil(%d, %d): Sequential read %d records to %d, the mapping %d to %d", offs[k], stop, len(got), s.NextOffset(), len(w), m.NextOffset())
			}
		}
	}
	// Every 97th record, jumping: forward within the buffer and past it.
	s := f.RecordsUntil(f.DataOffset, end)
	s.Sequential = true
	for i := 0; i < len(offs); i += 97 {
		s.JumpTo(offs[i])
		if !s.Next() || s.Offset() != offs[i] {
			t.Fatalf("JumpTo(%d): read %v at %d", offs[i], s.Err(), s.Offset())
		}
		if got := fmt.Sprintf("%v@%d:%x", s.Record().Type(), s.Offset(), normalize(s.Record())); got != want[i] {
			t.Fatalf("JumpTo(%d) read another record than the mapping's", offs[i])
		}
	}
	// A Reader that read to its end hands its buffer on; moved back, it
	// reads with another, while a second Reader reads with the first.
	done := f.RecordsUntil(f.DataOffset, end)
	done.Sequential = true
	records(t, done, done.Next)
	other := f.RecordsUntil(f.DataOffset, end)
	other.Sequential = true
	for i, j := 0, 0; i < len(offs); i, j = i+101, j+1 {
		done.JumpTo(offs[i])
		if !done.Next() || fmt.Sprintf("%v@%d:%x", done.Record().Type(), done.Offset(), normalize(done.Record())) != want[i] {
			t.Fatalf("after its end, JumpTo(%d) read %v, another record than the mapping's", offs[i], done.Err())
		}
		if !other.Next() || fmt.Sprintf("%v@%d:%x", other.Record().Type(), other.Offset(), normalize(other.Record())) != want[j] {
			t.Fatalf("the second Reader's record %d is not the mapping's (%v)", j, other.Err())
		}
	}
}

// TestSequentialCutShort: a file cut short while a Sequential Reader
// reads it is an error that says so, where a mapping would take SIGBUS.
func TestSequentialCutShort(t *testing.T) {
	a := fullAttr()
	var recs []perfdata.Record
	for range 2000 {
		recs = append(recs, allRecords(a)...)
	}
	path := perftest.WriteData(t, []*perfdata.Attr{a}, recs, nil)
	f, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Truncate(path, f.DataOffset+f.DataSize/2); err != nil {
		t.Fatal(err)
	}
	r := f.Records()
	r.Sequential = true
	for r.Next() {
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("reading a file cut short: %v, want an error that says it was cut short", err)
	}
}
