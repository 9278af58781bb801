package jitbundle

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/jitprof/jitprof/perfdata"
)

var sample = &Bundle{
	Processes: []Process{
		{PID: 4242, NSPID: 7, UID: 1000, GID: 100, StartTime: 123456},
		{PID: 1<<32 - 1, UID: 1<<32 - 2, GID: 0},
	},
	Files: []Entry{
		{PID: 4242, Kind: "perfmap", Path: "/tmp/perf-4242.map", MTime: 1700000000123456789, Data: []byte("1000 10 fib\n")},
		{PID: 4242, Kind: "jitdump", Path: "/srv/app/jit-4242.dump", MTime: -1, Data: []byte{}},
		{PID: 1<<32 - 1, Kind: "jitlog", Path: "", Data: bytes.Repeat([]byte{0xff}, 100)},
	},
}

func TestRoundTrip(t *testing.T) {
	for _, in := range []*Bundle{
		{},
		{Files: sample.Files[:1]},
		{Processes: sample.Processes[:1]},
		sample,
	} {
		b, err := Encode(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if !equal(out, in) {
			t.Errorf("Decode(Encode(%+v)) = %+v", in, out)
		}
		// A stream pads its event types to 8 bytes.
		padded := append(bytes.Clone(b), make([]byte, 7)...)
		if out, err := Decode(padded); err != nil || !equal(out, in) {
			t.Errorf("padded: %+v, %v", out, err)
		}
	}
}

func equal(a, b *Bundle) bool {
	return len(a.Processes) == len(b.Processes) && len(a.Files) == len(b.Files) &&
		(len(a.Processes) == 0 || reflect.DeepEqual(a.Processes, b.Processes)) &&
		(len(a.Files) == 0 || reflect.DeepEqual(a.Files, b.Files))
}

// encodeV1 is version 1, as jitprof wrote it into feature bit 200.
func encodeV1(entries []Entry) []byte {
	le := binary.LittleEndian
	b := append([]byte(Magic), 1, 0, 0, 0)
	b = le.AppendUint32(b, uint32(len(entries)))
	for _, e := range entries {
		b = le.AppendUint32(b, uint32(e.PID))
		b = le.AppendUint16(b, uint16(len(e.Kind)))
		b = append(b, e.Kind...)
		b = le.AppendUint16(b, uint16(len(e.Path)))
		b = append(b, e.Path...)
		b = le.AppendUint64(b, uint64(e.MTime))
		b = le.AppendUint64(b, uint64(len(e.Data)))
		b = append(b, e.Data...)
	}
	return b
}

func TestDecodeV1(t *testing.T) {
	out, err := Decode(encodeV1(sample.Files))
	if err != nil || len(out.Processes) != 0 || !reflect.DeepEqual(out.Files, sample.Files) {
		t.Errorf("Decode(v1) = %+v, %v", out, err)
	}
}

// TestLoad: a recording's bundle is in its event types, or, from jitprof
// before version 2, in feature bit 200; other event types are not ours.
func TestLoad(t *testing.T) {
	v2, err := Encode(sample)
	if err != nil {
		t.Fatal(err)
	}
	perfs := make([]byte, 72) // perf's own struct perf_trace_event_type
	copy(perfs[8:], "sched:sched_switch")
	for _, tt := range []struct {
		name       string
		eventTypes []byte
		feature    []byte
		want       *Bundle
	}{
		{"none", nil, nil, nil},
		{"event types", v2, nil, sample},
		{"feature bit 200", nil, encodeV1(sample.Files), &Bundle{Files: sample.Files}},
		{"perf's event types", perfs, nil, nil},
	} {
		f := &perfdata.File{EventTypes: tt.eventTypes}
		if tt.feature != nil {
			f.Features.SetRaw(perfdata.FeatJitprof, tt.feature)
		}
		got, err := Load(f)
		if err != nil || (got == nil) != (tt.want == nil) || got != nil && !equal(got, tt.want) {
			t.Errorf("%s: Load = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}

func TestEncodeLimits(t *testing.T) {
	tests := []*Bundle{
		{Files: []Entry{{PID: 1, Kind: ""}}},
		{Files: []Entry{{PID: 1, Kind: string(make([]byte, MaxKind+1))}}},
		{Files: []Entry{{PID: 1, Kind: "x", Path: string(make([]byte, MaxPath+1))}}},
		{Files: []Entry{{PID: -1, Kind: "x"}}},
		{Processes: []Process{{PID: 1, UID: -1}}},
		{Processes: []Process{{PID: 1 << 32}}},
	}
	for _, b := range tests {
		if _, err := Encode(b); !errors.Is(err, ErrLimit) {
			t.Errorf("Encode(%+v) = %v, want ErrLimit", b, err)
		}
	}
}

func TestDecodeBad(t *testing.T) {
	good, err := Encode(sample)
	if err != nil {
		t.Fatal(err)
	}
	patch := func(off int, v uint32) []byte {
		b := bytes.Clone(good)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrFormat},
		{"bad magic", append([]byte("JITPBNDX"), good[8:]...), ErrFormat},
		{"version 3", patch(8, 3), ErrVersion},
		{"flags", patch(12, 1), ErrFormat},
		{"size past the end", patch(16, uint32(len(good)+1)), ErrFormat},
		{"size inside the header", patch(16, 8), ErrFormat},
		{"huge file count", patch(28, 0x7fffffff), ErrLimit},
		{"huge process count", patch(24, 0x7fffffff), ErrLimit},
		{"count past the data", patch(28, 9), ErrFormat},
		{"truncated", good[:len(good)-1], ErrFormat},
		{"non-zero bytes past the end", append(bytes.Clone(good), 1), ErrFormat},
		{"v1 trailing bytes", append(encodeV1(sample.Files), 0), ErrFormat},
	}
	for _, tt := range tests {
		if _, err := Decode(tt.b); !errors.Is(err, tt.want) {
			t.Errorf("%s: Decode = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	good, _ := Encode(sample)
	f.Add(good)
	f.Add(good[:40])
	f.Add(encodeV1(sample.Files))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := Decode(b)
		if err != nil {
			return
		}
		// What decodes re-encodes (as version 2) and decodes the same.
		again, err := Encode(out)
		if err != nil {
			t.Fatalf("Encode of a decoded bundle: %v", err)
		}
		back, err := Decode(again)
		if err != nil || !equal(back, out) {
			t.Errorf("re-encoding differs: %v", err)
		}
	})
}

// testSource streams data, claiming size.
type testSource struct {
	data []byte
	size int64
}

func (s testSource) Len() int64 { return s.size }
func (s testSource) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(s.data)
	return int64(n), err
}

// TestWriteToSources: a file streamed from a source encodes as its bytes
// would; one that gives fewer bytes than it said is padded with zeros,
// one that gives more is cut, so the bundle always decodes; WriteTo says
// the size it wrote, which Size foretold.
func TestWriteToSources(t *testing.T) {
	data := []byte("1000 10 fib\n2000 10 sum\n")
	for _, c := range []struct {
		src  testSource
		want []byte
	}{
		{testSource{data, int64(len(data))}, data},
		{testSource{data[:5], int64(len(data))}, append(bytes.Clone(data[:5]), make([]byte, len(data)-5)...)},
		{testSource{data, 5}, data[:5]},
		{testSource{nil, 0}, []byte{}},
	} {
		b := &Bundle{Processes: sample.Processes, Files: []Entry{
			{PID: 1, Kind: "perfmap", Path: "/tmp/perf-1.map", Src: c.src},
			{PID: 2, Kind: "jitdump", Path: "/tmp/jit-2.dump", Data: []byte("x")},
		}}
		var buf bytes.Buffer
		n, err := WriteTo(&buf, b)
		if err != nil {
			t.Fatal(err)
		}
		if size, _ := Size(b); n != int64(buf.Len()) || n != size {
			t.Errorf("WriteTo wrote %d bytes, said %d, Size said %d", buf.Len(), n, size)
		}
		out, err := Decode(buf.Bytes())
		if err != nil {
			t.Fatalf("source %q of size %d: %v", c.src.data, c.src.size, err)
		}
		if got := out.Files[0].Data; !bytes.Equal(got, c.want) || string(out.Files[1].Data) != "x" {
			t.Errorf("source %q of size %d decodes as %q, %q; want %q", c.src.data, c.src.size, got, out.Files[1].Data, c.want)
		}
	}
}
