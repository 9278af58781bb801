package jitdump

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/jitname"
)

// raw builds jitdump bytes field by field, independently of Writer, so
// that reader tests do not trust the writer.
type raw struct {
	o appendOrder
	b []byte
}

func (r *raw) u32(v uint32) *raw   { r.b = r.o.AppendUint32(r.b, v); return r }
func (r *raw) u64(v uint64) *raw   { r.b = r.o.AppendUint64(r.b, v); return r }
func (r *raw) str(s string) *raw   { r.b = append(append(r.b, s...), 0); return r }
func (r *raw) bytes(p []byte) *raw { r.b = append(r.b, p...); return r }

func (r *raw) header(pid uint32) *raw {
	return r.u32(Magic).u32(1).u32(HeaderSize).u32(62).u32(0).u32(pid).u64(1000).u64(0)
}

// rec appends a record whose body is built by f, fixing up total_size.
func (r *raw) rec(id uint32, ts uint64, f func(*raw)) *raw {
	start := len(r.b)
	r.u32(id).u32(0).u64(ts)
	if f != nil {
		f(r)
	}
	r.o.PutUint32(r.b[start+4:], uint32(len(r.b)-start))
	return r
}

func le() *raw { return &raw{o: binary.LittleEndian} }

func load(name string, addr, index uint64, code []byte) func(*raw) {
	return func(r *raw) {
		r.u32(7).u32(8).u64(addr).u64(addr).u64(uint64(len(code))).u64(index).str(name).bytes(code)
	}
}

func readAll(t *testing.T, in []byte) (Header, []Record, error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(in))
	if err != nil {
		return Header{}, nil, err
	}
	var recs []Record
	for r.Next() {
		recs = append(recs, clone(r.Record()))
	}
	return r.Header(), recs, r.Err()
}

// clone copies a record out of the reader's reused storage. Empty slices
// become nil so that records compare equal however they were read.
func clone(rec Record) Record {
	switch r := rec.(type) {
	case *CodeLoad:
		c := *r
		c.Code = cloneBytes(r.Code)
		return &c
	case *CodeMove:
		c := *r
		return &c
	case *DebugInfo:
		c := *r
		if len(r.Entries) > 0 {
			c.Entries = append([]DebugEntry(nil), r.Entries...)
		}
		return &c
	case *CodeClose:
		c := *r
		return &c
	case *UnwindingInfo:
		c := *r
		c.Data = cloneBytes(r.Data)
		return &c
	case *Unknown:
		c := *r
		c.Data = cloneBytes(r.Data)
		return &c
	}
	panic("unreachable: unknown record type")
}

func cloneBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}

func TestReader(t *testing.T) {
	code := []byte{0x55, 0x48, 0x89, 0xe5, 0xc3}
	be := &raw{o: binary.BigEndian}
	tests := []struct {
		name  string
		in    []byte
		order binary.ByteOrder
		want  []Record
		err   error // sentinel Err or NewReader must wrap
	}{
		{
			name:  "load, move, close",
			in:    le().header(42).rec(0, 10, load("JS:*fib /a b.js:1:13", 0x1000, 1, code)).rec(1, 20, func(r *raw) { r.u32(7).u32(8).u64(0x2000).u64(0x1000).u64(0x2000).u64(5).u64(1) }).rec(3, 30, nil).b,
			order: binary.LittleEndian,
			want: []Record{
				&CodeLoad{RecordHeader: RecordHeader{Type: TypeCodeLoad, Size: 16 + 40 + 21 + 5, Timestamp: 10, Offset: 40}, PID: 7, TID: 8, VMA: 0x1000, CodeAddr: 0x1000, CodeSize: 5, CodeIndex: 1, Name: "JS:*fib /a b.js:1:13", Code: code},
				&CodeMove{RecordHeader: RecordHeader{Type: TypeCodeMove, Size: 64, Timestamp: 20, Offset: 122}, PID: 7, TID: 8, VMA: 0x2000, OldCodeAddr: 0x1000, NewCodeAddr: 0x2000, CodeSize: 5, CodeIndex: 1},
				&CodeClose{RecordHeader: RecordHeader{Type: TypeCodeClose, Size: 16, Timestamp: 30, Offset: 186}},
			},
		},
		{
			name:  "big endian",
			in:    be.header(42).rec(0, 10, load("f", 0x1000, 1, nil)).b,
			order: binary.BigEndian,
			want: []Record{
				&CodeLoad{RecordHeader: RecordHeader{Type: TypeCodeLoad, Size: 16 + 40 + 2, Timestamp: 10, Offset: 40}, PID: 7, TID: 8, VMA: 0x1000, CodeAddr: 0x1000, CodeIndex: 1, Name: "f"},
			},
		},
		{
			name: "debug info with same-as-previous file names",
			in: le().header(1).rec(2, 5, func(r *raw) {
				r.u64(0x1000).u64(3)
				r.u64(0x1000).u32(1).u32(0).str("a.js")
				r.u64(0x1004).u32(2).u32(3).str("\xff")
				r.u64(0x1008).u32(9).u32(0).str("b.js")
			}).b,
			order: binary.LittleEndian,
			want: []Record{
				&DebugInfo{RecordHeader: RecordHeader{Type: TypeCodeDebugInfo, Size: 16 + 16 + 3*16 + 5 + 2 + 5, Timestamp: 5, Offset: 40}, CodeAddr: 0x1000, Entries: []DebugEntry{
					{Addr: 0x1000, Line: 1, File: "a.js"}, {Addr: 0x1004, Line: 2, Discrim: 3, File: "a.js"}, {Addr: 0x1008, Line: 9, File: "b.js"},
				}},
			},
		},
		{
			name: "unwinding info drops padding; unknown record kept raw",
			in: le().header(1).rec(4, 5, func(r *raw) {
				r.u64(5).u64(2).u64(5).bytes([]byte{1, 2, 3, 4, 5, 0, 0, 0})
			}).rec(99, 6, func(r *raw) { r.bytes([]byte("future")) }).b,
			order: binary.LittleEndian,
			want: []Record{
				&UnwindingInfo{RecordHeader: RecordHeader{Type: TypeCodeUnwindingInfo, Size: 48, Timestamp: 5, Offset: 40}, EHFrameHdrSize: 2, MappedSize: 5, Data: []byte{1, 2, 3, 4, 5}},
				&Unknown{RecordHeader: RecordHeader{Type: 99, Size: 22, Timestamp: 6, Offset: 88}, Data: []byte("future")},
			},
		},
		{
			name:  "longer header is skipped",
			in:    le().u32(Magic).u32(1).u32(48).u32(62).u32(0).u32(1).u64(0).u64(0).u64(0xdead).rec(3, 1, nil).b,
			order: binary.LittleEndian,
			want:  []Record{&CodeClose{RecordHeader: RecordHeader{Type: TypeCodeClose, Size: 16, Timestamp: 1, Offset: 48}}},
		},
		{name: "empty file", in: nil, err: ErrTruncated},
		{name: "bad magic", in: append([]byte("ELF\x7f"), make([]byte, 36)...), err: ErrBadMagic},
		{name: "version 2", in: le().u32(Magic).u32(2).u32(40).u32(0).u32(0).u32(0).u64(0).u64(0).b, err: ErrVersion},
		{name: "header size too small", in: le().u32(Magic).u32(1).u32(39).u32(0).u32(0).u32(0).u64(0).u64(0).b, err: ErrMalformed},
		{
			name: "torn record after a whole one",
			in:   le().header(1).rec(3, 1, nil).rec(0, 2, load("fib", 1, 1, code)).b[:40+16+30],
			want: []Record{&CodeClose{RecordHeader: RecordHeader{Type: TypeCodeClose, Size: 16, Timestamp: 1, Offset: 40}}},
			err:  ErrTruncated,
		},
		{name: "torn record header", in: le().header(1).u32(0).b, err: ErrTruncated},
		{name: "total_size below header", in: le().header(1).u32(3).u32(8).u64(0).b, err: ErrMalformed},
		{name: "huge total_size", in: le().header(1).u32(0).u32(0xffffffff).u64(0).b, err: ErrTooLarge},
		{name: "name without NUL", in: le().header(1).rec(0, 1, func(r *raw) { r.u32(1).u32(1).u64(1).u64(1).u64(0).u64(1).bytes([]byte("abc")) }).b, err: ErrMalformed},
		{name: "short code load", in: le().header(1).rec(0, 1, func(r *raw) { r.u32(1).u32(1).u64(1) }).b, err: ErrMalformed},
		{name: "unwind size beyond the record", in: le().header(1).rec(4, 1, func(r *raw) { r.u64(100).u64(0).u64(0) }).b, err: ErrMalformed},
		{name: "eh_frame_hdr beyond unwind data", in: le().header(1).rec(4, 1, func(r *raw) { r.u64(0).u64(8).u64(0) }).b, err: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, recs, err := readAll(t, tt.in)
			if tt.err == nil && err != nil || !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if tt.order != nil && h.ByteOrder != tt.order {
				t.Errorf("byte order %v, want %v", h.ByteOrder, tt.order)
			}
			if !reflect.DeepEqual(recs, tt.want) {
				t.Errorf("records:\n got %s\nwant %s", dump(recs), dump(tt.want))
			}
		})
	}
}

func dump(recs []Record) string {
	var b strings.Builder
	for _, r := range recs {
		b.WriteString("\n\t")
		fmt.Fprintf(&b, "%T%+v", r, r)
	}
	return b.String()
}

// TestTornPrefixes cuts a real file at every byte: the reader must return
// exactly the records that end before the cut, then ErrTruncated unless the
// cut falls on a record boundary.
func TestTornPrefixes(t *testing.T) {
	full := readTestdata(t)
	_, all, err := readAll(t, full)
	if err != nil {
		t.Fatal(err)
	}
	ends := map[int]int{} // record end offset -> records up to it
	for i, r := range all {
		h := r.Header()
		ends[int(h.Offset)+int(h.Size)] = i + 1
	}
	whole := 0
	for cut := HeaderSize; cut <= len(full); cut++ {
		if n, ok := ends[cut]; ok {
			whole = n
		}
		_, recs, err := readAll(t, full[:cut])
		_, boundary := ends[cut]
		if cut == HeaderSize {
			boundary = true
		}
		if boundary != (err == nil) || !boundary && !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d: err = %v, record boundary %v", cut, err, boundary)
		}
		if len(recs) != whole {
			t.Fatalf("cut at %d: %d records, want %d", cut, len(recs), whole)
		}
	}
}

func readTestdata(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/node20-fib.dump")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTestdata reads records cut from a real `node --perf-prof` dump.
func TestTestdata(t *testing.T) {
	h, recs, err := readAll(t, readTestdata(t))
	if err != nil {
		t.Fatal(err)
	}
	checkNodeDump(t, h, recs, "/tmp/jp/fib.js")

	// Node 20 wrote the script's file name from freed memory in every line
	// table of fib.js code; node:path's table is sound.
	var bad, good []string
	for _, r := range recs {
		if d, ok := r.(*DebugInfo); ok {
			if d.Err != nil {
				bad = append(bad, fmt.Sprintf("%#x", d.CodeAddr))
			} else {
				good = append(good, d.Entries[0].File)
			}
		}
	}
	if len(bad) != 3 || !reflect.DeepEqual(good, []string{"node:path"}) {
		t.Errorf("debug records: malformed at %v, sound for %v; want 3 malformed and node:path sound", bad, good)
	}
}

// checkNodeDump asserts what V8 writes: x86-64, optimized fib code with
// its machine code, each CODE_LOAD after its debug and unwinding records.
func checkNodeDump(t *testing.T, h Header, recs []Record, script string) {
	t.Helper()
	if h.ElfMach != 62 || h.ByteOrder != binary.LittleEndian {
		t.Errorf("header %+v: want x86-64 little endian", h)
	}
	debugFor := map[uint64]bool{}
	var goodDebug int
	var optFib, withDebug int
	var unwinds int
	seen := map[uint64]bool{}
	for _, r := range recs {
		switch r := r.(type) {
		case *DebugInfo:
			debugFor[r.CodeAddr] = true
			if r.Err == nil {
				goodDebug++
			}
			for _, e := range r.Entries {
				if e.File == "" || e.Line == 0 {
					t.Errorf("debug entry %+v lacks a file or line", e)
				}
			}
		case *UnwindingInfo:
			unwinds++
		case *CodeLoad:
			if seen[r.CodeIndex] {
				t.Errorf("code_index %d loaded twice", r.CodeIndex)
			}
			seen[r.CodeIndex] = true
			if uint64(len(r.Code)) != r.CodeSize || r.CodeSize == 0 || r.CodeAddr != r.VMA {
				t.Errorf("%q: %d code bytes, code_size %d, addr %#x vma %#x", r.Name, len(r.Code), r.CodeSize, r.CodeAddr, r.VMA)
			}
			if r.Name == "JS:*fib "+script+":1:13" {
				optFib++
			}
			if debugFor[r.CodeAddr] {
				withDebug++
			}
		}
	}
	if optFib == 0 || withDebug == 0 || goodDebug == 0 || unwinds == 0 {
		t.Errorf("%d loads of optimized fib, %d loads after their debug info, %d sound debug records, %d unwinding records; want all > 0", optFib, withDebug, goodDebug, unwinds)
	}
}

// TestBadDebugInfo checks that a debug record whose entries cannot be
// trusted is flagged and the records after it still read.
func TestBadDebugInfo(t *testing.T) {
	tests := []struct {
		name string
		body func(*raw)
	}{
		{"short", func(r *raw) { r.u64(0x1000) }},
		{"nr_entry beyond the record", func(r *raw) { r.u64(0x1000).u64(1 << 60) }},
		{"same-as-previous first", func(r *raw) { r.u64(0x1000).u64(1).u64(1).u32(1).u32(0).str("\xff") }},
		{"name without NUL", func(r *raw) { r.u64(0x1000).u64(1).u64(1).u32(1).u32(0).bytes([]byte("abc")) }},
		// The shape Node 20 writes: a name of the right length with a NUL inside.
		{"NUL inside a name", func(r *raw) {
			r.u64(0x1000).u64(2).u64(1).u32(1).u32(0).str("V-\x01\x00\x00\xf9\xb3").u64(2).u32(1).u32(0).str("V-\x01\x00\x00\xf9\xb3")
		}},
		{"garbage after entries", func(r *raw) { r.u64(0x1000).u64(1).u64(1).u32(1).u32(0).str("a.js").bytes([]byte{0, 0, 1}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, recs, err := readAll(t, le().header(1).rec(2, 1, tt.body).rec(3, 2, nil).b)
			if err != nil {
				t.Fatalf("err = %v, want the reader to go on", err)
			}
			if len(recs) != 2 {
				t.Fatalf("%d records, want debug info and close", len(recs))
			}
			d, ok := recs[0].(*DebugInfo)
			if !ok || !errors.Is(d.Err, ErrMalformed) || d.Entries != nil {
				t.Errorf("record 0 = %+v, want DebugInfo with ErrMalformed and no entries", recs[0])
			}
			if _, ok := recs[1].(*CodeClose); !ok {
				t.Errorf("record 1 = %T, want *CodeClose", recs[1])
			}
		})
	}
}

func TestReaderDoesNotTrustSizes(t *testing.T) {
	// A 4 GB total_size on a short file must fail fast without allocating it.
	in := le().header(1).u32(0).u32(0xfffffff0).u64(0).bytes(make([]byte, 100)).b
	r, err := NewReader(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	r.MaxRecordSize = 0xffffffff
	// Count bytes, not allocations: the race detector adds allocations of
	// its own, but a reader that believed the size would allocate 4 GB.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r2, _ := NewReader(bytes.NewReader(in))
	r2.MaxRecordSize = 0xffffffff
	for r2.Next() {
	}
	runtime.ReadMemStats(&after)
	for r.Next() {
	}
	if !errors.Is(r.Err(), ErrTruncated) {
		t.Errorf("err = %v, want ErrTruncated", r.Err())
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 { // the read buffer, never the 4 GB claimed
		t.Errorf("%d bytes allocated reading a lying record", n)
	}
	if cap(r.buf) > 2*readChunk {
		t.Errorf("buffer grew to %d bytes for 100 bytes of data", cap(r.buf))
	}
}

// TestLongNamesAreCut: a CODE_LOAD may carry a name of up to the record
// limit (64 MiB); the reader keeps jitname.Max bytes of it, marked as cut,
// and so does a debug entry's file name.
func TestLongNamesAreCut(t *testing.T) {
	long := strings.Repeat("x", 8<<20)
	in := le().header(1).
		rec(2, 1, func(r *raw) { r.u64(0x1000).u64(1).u64(0x1000).u32(7).u32(0).str(long) }).
		rec(0, 2, func(r *raw) {
			r.u32(1).u32(1).u64(0x1000).u64(0x1000).u64(4).u64(1).str(long).bytes([]byte{0x90, 0x90, 0x90, 0xc3})
		}).b
	_, recs, err := readAll(t, in)
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records, err %v", len(recs), err)
	}
	d := recs[0].(*DebugInfo)
	l := recs[1].(*CodeLoad)
	want := "...[name of 8388608 bytes cut]"
	for what, name := range map[string]string{"CODE_LOAD name": l.Name, "debug file name": d.Entries[0].File} {
		if len(name) > jitname.Max || !strings.HasSuffix(name, want) || !strings.HasPrefix(name, "xxxx") {
			t.Errorf("%s: %d bytes ending %q, want at most %d ending %q", what, len(name), name[max(0, len(name)-40):], jitname.Max, want)
		}
	}
	if len(l.Code) != 4 || l.Code[3] != 0xc3 {
		t.Errorf("code %x after a long name", l.Code)
	}
}

// TestBadMagicQuotesNothing: a dump may be any file put in its place; the
// error says where and what, not the bytes.
func TestBadMagicQuotesNothing(t *testing.T) {
	_, err := NewReader(strings.NewReader("root:$6$secret:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n"))
	if !errors.Is(err, ErrBadMagic) || strings.Contains(err.Error(), "root") || !strings.Contains(err.Error(), "offset 0") {
		t.Errorf("error %q: want ErrBadMagic at offset 0, without the file's bytes", err)
	}
}

// TestResumeReader: a reader resumed at the offset where another stopped
// reads the records after it, at the same offsets, as one reader of the
// whole dump does.
func TestResumeReader(t *testing.T) {
	b, _ := AppendHeader(nil, Header{ByteOrder: binary.LittleEndian, Version: 1, ElfMach: 62, PID: 7})
	for i := range uint64(10) {
		b, _ = AppendRecord(b, binary.LittleEndian, &CodeLoad{PID: 7, TID: 7, CodeAddr: 0x1000 + i, CodeSize: 4, CodeIndex: i, Name: fmt.Sprint("f", i)})
	}
	whole, err := NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for whole.Next() {
		want = append(want, fmt.Sprintf("%d %+v", whole.Record().Header().Offset, whole.Record()))
	}
	first, _ := NewReader(bytes.NewReader(b))
	var got []string
	for range 4 {
		first.Next()
		got = append(got, fmt.Sprintf("%d %+v", first.Record().Header().Offset, first.Record()))
	}
	off := first.Offset()
	r := ResumeReader(bytes.NewReader(b[off:]), first.Header(), off)
	for r.Next() {
		got = append(got, fmt.Sprintf("%d %+v", r.Record().Header().Offset, r.Record()))
	}
	if r.Err() != nil || r.Offset() != int64(len(b)) || !reflect.DeepEqual(got, want) {
		t.Errorf("resumed at %d: %v, ends at %d of %d\n got %q\nwant %q", off, r.Err(), r.Offset(), len(b), got, want)
	}
}
