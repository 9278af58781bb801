package jitdump

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

func sampleRecords() []Record {
	return []Record{
		&DebugInfo{RecordHeader: RecordHeader{Type: TypeCodeDebugInfo, Timestamp: 100}, CodeAddr: 0x7f0000001000, Entries: []DebugEntry{
			{Addr: 0x7f0000001000, Line: 1, Discrim: 13, File: "/srv/app/fib.js"},
			{Addr: 0x7f0000001010, Line: 1, Discrim: 30, File: "/srv/app/fib.js"},
			{Addr: 0x7f0000001020, Line: 7, File: "node:path"},
		}},
		&UnwindingInfo{RecordHeader: RecordHeader{Type: TypeCodeUnwindingInfo, Timestamp: 101}, EHFrameHdrSize: 4, MappedSize: 0, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}},
		&CodeLoad{RecordHeader: RecordHeader{Type: TypeCodeLoad, Timestamp: 102}, PID: 4242, TID: 4243, VMA: 0x7f0000001000, CodeAddr: 0x7f0000001000, CodeSize: 3, CodeIndex: 1, Name: "JS:*fib /srv/app/fib.js:1:13", Code: []byte{0x90, 0x90, 0xc3}},
		&CodeLoad{RecordHeader: RecordHeader{Type: TypeCodeLoad, Timestamp: 103}, PID: 4242, TID: 4243, VMA: 0x7f0000002000, CodeAddr: 0x7f0000002000, CodeIndex: 2, Name: "empty"},
		&CodeMove{RecordHeader: RecordHeader{Type: TypeCodeMove, Timestamp: 104}, PID: 4242, TID: 4243, VMA: 0x7f0000003000, OldCodeAddr: 0x7f0000001000, NewCodeAddr: 0x7f0000003000, CodeSize: 3, CodeIndex: 1},
		&Unknown{RecordHeader: RecordHeader{Type: 77, Timestamp: 105}, Data: []byte("from the future")},
		&CodeClose{RecordHeader: RecordHeader{Type: TypeCodeClose, Timestamp: 106}},
	}
}

func TestWriteRoundTrip(t *testing.T) {
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			hdr := Header{ByteOrder: order, Version: Version, Size: HeaderSize, ElfMach: 62, PID: 4242, Timestamp: 99, Flags: FlagArchTimestamp}
			var buf bytes.Buffer
			w, err := NewWriter(&buf, hdr)
			if err != nil {
				t.Fatal(err)
			}
			want := sampleRecords()
			for _, r := range want {
				if err := w.Write(r); err != nil {
					t.Fatalf("Write(%T): %v", r, err)
				}
			}
			gotHdr, got, err := readAll(t, buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if gotHdr != hdr {
				t.Errorf("header = %+v, want %+v", gotHdr, hdr)
			}
			if len(got) != len(want) {
				t.Fatalf("read %d records, want %d", len(got), len(want))
			}
			off := int64(HeaderSize)
			for i := range got {
				h := got[i].Header()
				if h.Offset != off || h.Size%8 != 0 && h.Type == TypeCodeUnwindingInfo {
					t.Errorf("record %d: offset %d size %d, want offset %d (unwinding info padded to 8)", i, h.Offset, h.Size, off)
				}
				off += int64(h.Size)
				h.Offset, h.Size = 0, 0
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("record %d:\n got %+v\nwant %+v", i, got[i], want[i])
				}
			}
			if off != int64(buf.Len()) {
				t.Errorf("records end at %d, file is %d bytes", off, buf.Len())
			}
		})
	}
}

// writeCounter counts Write calls so that a test can check one per record.
type writeCounter struct {
	bytes.Buffer
	calls int
}

func (w *writeCounter) Write(p []byte) (int, error) { w.calls++; return w.Buffer.Write(p) }

func TestWriterOneWritePerRecord(t *testing.T) {
	var wc writeCounter
	w, err := NewWriter(&wc, Header{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sampleRecords() {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if want := 1 + len(sampleRecords()); wc.calls != want {
		t.Errorf("%d Write calls, want %d (header + one per record)", wc.calls, want)
	}
}

func TestWriterRejects(t *testing.T) {
	tests := []struct {
		name string
		rec  Record
	}{
		{"code shorter than code_size", &CodeLoad{CodeSize: 4, Code: []byte{1}, Name: "f"}},
		{"NUL in name", &CodeLoad{Name: "a\x00b"}},
		{"NUL in file name", &DebugInfo{Entries: []DebugEntry{{File: "a\x00"}}}},
		{"reserved file name", &DebugInfo{Entries: []DebugEntry{{File: "\xff"}}}},
		{"eh_frame_hdr beyond data", &UnwindingInfo{EHFrameHdrSize: 9, Data: []byte{1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, Header{})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(tt.rec); err == nil {
				t.Fatal("Write succeeded")
			}
			if buf.Len() != HeaderSize {
				t.Errorf("a rejected record left %d bytes behind", buf.Len()-HeaderSize)
			}
		})
	}
	if _, err := NewWriter(&bytes.Buffer{}, Header{ByteOrder: oddOrder{}}); err == nil {
		t.Error("NewWriter accepted a byte order it cannot write")
	}
}

// oddOrder is a binary.ByteOrder without the Append methods.
type oddOrder struct{ binary.ByteOrder }

// TestNodePerfProf reads the jitdump of a real V8 run.
func TestNodePerfProf(t *testing.T) {
	script, pid := perftest.Node(t, "--perf-prof", "--perf-prof-unwinding-info", "--interpreted-frames-native-stack")
	in, err := os.ReadFile(filepath.Join(filepath.Dir(script), fmt.Sprintf("jit-%d.dump", pid)))
	if err != nil {
		t.Fatal(err)
	}
	h, recs, err := readAll(t, in)
	if err != nil {
		t.Fatal(err)
	}
	if h.PID != uint32(pid) {
		t.Errorf("header pid %d, want %d", h.PID, pid)
	}
	checkNodeDump(t, h, recs, script)
	// --interpreted-frames-native-stack gives each interpreted function
	// its own trampoline, named with ~.
	var interp bool
	for _, r := range recs {
		if l, ok := r.(*CodeLoad); ok && l.Name == "JS:~fib "+script+":1:13" {
			interp = true
		}
	}
	if !interp {
		t.Error("no CODE_LOAD for the interpreted fib trampoline")
	}
}

func FuzzReader(f *testing.F) {
	f.Add(readTestdata(f))
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{ByteOrder: binary.BigEndian})
	if err != nil {
		f.Fatal(err)
	}
	for _, r := range sampleRecords() {
		if err := w.Write(r); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := NewReader(bytes.NewReader(in))
		if err != nil {
			return
		}
		r.MaxRecordSize = 1 << 16
		var out bytes.Buffer
		w, err := NewWriter(&out, r.Header())
		if err != nil {
			t.Fatalf("NewWriter with a header the reader accepted: %v", err)
		}
		var recs []Record
		end := int64(r.Header().Size)
		for r.Next() {
			rec := r.Record()
			h := rec.Header()
			if h.Offset != end || h.Size < RecordHeaderSize {
				t.Fatalf("record at %d of size %d, previous ended at %d", h.Offset, h.Size, end)
			}
			end += int64(h.Size)
			if l, ok := rec.(*CodeLoad); ok && uint64(len(l.Code)) != l.CodeSize {
				continue // readable, but perf could not use it; the writer refuses it
			}
			if d, ok := rec.(*DebugInfo); ok && d.Err != nil {
				continue
			}
			if err := w.Write(rec); err != nil {
				t.Fatalf("writing back %T: %v", rec, err)
			}
			recs = append(recs, clone(rec))
		}
		if end > int64(len(in)) || r.Offset() != end {
			t.Fatalf("records end at %d, offset %d, input %d bytes", end, r.Offset(), len(in))
		}
		_, again, err := readAll(t, out.Bytes())
		if err != nil || len(again) != len(recs) {
			t.Fatalf("re-read: %v, %d records, want %d", err, len(again), len(recs))
		}
		for i := range recs {
			a, b := recs[i], again[i]
			a.Header().Offset, a.Header().Size = 0, 0
			b.Header().Offset, b.Header().Size = 0, 0
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("record %d: %+v re-read as %+v", i, a, b)
			}
		}
	})
}

func BenchmarkReader(b *testing.B) {
	// 10,000 CODE_LOADs of 200 code bytes with line tables, like a busy V8.
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{})
	if err != nil {
		b.Fatal(err)
	}
	code := make([]byte, 200)
	for i := range 10000 {
		addr := uint64(0x7f0000000000 + i*256)
		if err := w.Write(&DebugInfo{CodeAddr: addr, Entries: []DebugEntry{{Addr: addr, Line: 1, File: "/srv/app.js"}, {Addr: addr + 8, Line: 2, File: "/srv/app.js"}}}); err != nil {
			b.Fatal(err)
		}
		if err := w.Write(&CodeLoad{RecordHeader: RecordHeader{Timestamp: uint64(i)}, VMA: addr, CodeAddr: addr, CodeSize: 200, CodeIndex: uint64(i), Name: fmt.Sprintf("JS:*f%d /srv/app.js:%d:1", i, i), Code: code}); err != nil {
			b.Fatal(err)
		}
	}
	in := buf.Bytes()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(in))
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for r.Next() {
			n++
		}
		if n != 20000 || r.Err() != nil {
			b.Fatalf("%d records, %v", n, r.Err())
		}
	}
}
