package jitbundle

import (
	"errors"
	"slices"
	"testing"
)

func TestTSCRoundTrip(t *testing.T) {
	pairs := []TSCPair{{TSC: 1, Nanos: 2}, {TSC: 1<<64 - 1, Nanos: 1 << 63}}
	got, err := DecodeTSC(EncodeTSC(pairs))
	if err != nil || !slices.Equal(got, pairs) {
		t.Errorf("round trip: %v %v, want %v", got, err, pairs)
	}
	// Inside a bundle, beside a file.
	b, err := Encode(&Bundle{Files: []Entry{{PID: 7, Kind: "perfmap", Path: "/tmp/perf-7.map", Data: []byte("x")}, {PID: 7, Kind: KindTSC, Path: TSCPath, MTime: -1, Data: EncodeTSC(pairs)}}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decode(b)
	var es []Entry
	if d != nil {
		es = d.Files
	}
	if err != nil || len(es) != 2 || es[1].Kind != KindTSC {
		t.Fatalf("decode: %+v %v", es, err)
	}
	if got, err := DecodeTSC(es[1].Data); err != nil || !slices.Equal(got, pairs) {
		t.Errorf("from the bundle: %v %v", got, err)
	}
}

func TestTSCBad(t *testing.T) {
	for _, n := range []int{1, 15, 17, 16 * (MaxTSCPairs + 1)} {
		if _, err := DecodeTSC(make([]byte, n)); !errors.Is(err, ErrFormat) {
			t.Errorf("%d bytes: error %v, want ErrFormat", n, err)
		}
	}
}

func FuzzDecodeTSC(f *testing.F) {
	f.Add(EncodeTSC([]TSCPair{{1, 2}, {3, 4}}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		pairs, err := DecodeTSC(b)
		if err == nil && !slices.Equal(EncodeTSC(pairs), b) {
			t.Errorf("%d bytes decode to %d pairs that encode differently", len(b), len(pairs))
		}
	})
}
