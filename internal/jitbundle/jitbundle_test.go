package jitbundle

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

var sample = []Entry{
	{PID: 4242, Kind: "perfmap", Path: "/tmp/perf-4242.map", MTime: 1700000000123456789, Data: []byte("1000 10 fib\n")},
	{PID: 4242, Kind: "jitdump", Path: "/srv/app/jit-4242.dump", MTime: -1, Data: []byte{}},
	{PID: 1<<32 - 1, Kind: "jitlog", Path: "", Data: bytes.Repeat([]byte{0xff}, 100)},
}

func TestRoundTrip(t *testing.T) {
	for _, in := range [][]Entry{nil, sample[:1], sample} {
		b, err := Encode(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(in) == 0 && len(out) == 0 {
			continue
		}
		if !reflect.DeepEqual(out, in) {
			t.Errorf("Decode(Encode(%v)) = %v", in, out)
		}
	}
}

func TestEncodeLimits(t *testing.T) {
	tests := []Entry{
		{PID: 1, Kind: ""},
		{PID: 1, Kind: string(make([]byte, MaxKind+1))},
		{PID: 1, Kind: "x", Path: string(make([]byte, MaxPath+1))},
		{PID: -1, Kind: "x"},
	}
	for _, e := range tests {
		if _, err := Encode([]Entry{e}); !errors.Is(err, ErrLimit) {
			t.Errorf("Encode(kind %d bytes, path %d bytes, pid %d) = %v, want ErrLimit", len(e.Kind), len(e.Path), e.PID, err)
		}
	}
}

func TestDecodeBad(t *testing.T) {
	good, err := Encode(sample)
	if err != nil {
		t.Fatal(err)
	}
	huge := append([]byte(nil), good[:16]...)
	huge[12], huge[13], huge[14], huge[15] = 0xff, 0xff, 0xff, 0x7f
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrFormat},
		{"bad magic", append([]byte("JITPBNDX"), good[8:]...), ErrFormat},
		{"version 2", append(append([]byte(nil), good[:8]...), append([]byte{2, 0, 0, 0}, good[12:]...)...), ErrVersion},
		{"huge count", huge, ErrLimit},
		{"count past the data", append(append([]byte(nil), good[:12]...), 9, 0, 0, 0), ErrFormat},
		{"truncated", good[:len(good)-1], ErrFormat},
		{"trailing bytes", append(append([]byte(nil), good...), 0), ErrFormat},
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
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := Decode(b)
		if err != nil {
			return
		}
		// What decodes re-encodes to the same bytes.
		again, err := Encode(es)
		if err != nil {
			t.Fatalf("Encode of decoded entries: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Errorf("re-encoding differs")
		}
	})
}
