package perfdatasrc

import (
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/perfdata"
)

// TestReturnAddressLine: with lines, an address sampled as the IP and the
// same address as a return address in a callchain are two frames (the
// return address names its call, the line of the byte before). They
// shared one cache entry, so the line depended on which came first, and
// so on how the file was split for reading in parallel: FuzzReplay's
// return-address-line input, and TestParallelLoadIsSequential/system,
// which failed on a busy machine.
func TestReturnAddressLine(t *testing.T) {
	busy := perftest.Busy(t)
	im, err := symbolize.Load(busy, symbolize.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// work_a's first byte: as a return address, its call is in the
	// function before it.
	off := uint64(0)
	for ; ; off++ {
		if s, ok := im.LookupFileOffset(off); ok && s.Name == "work_a" {
			break
		}
		if off == 1<<20 {
			t.Fatal("no work_a in the first MB of busy")
		}
	}
	a := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod | perfdata.SampleCallchain,
		Flags:      perfdata.FlagSampleIDAll,
		IDs:        []uint64{1},
	}
	leaf := base + off
	recs := []perfdata.Record{
		&perfdata.Mmap{Common: common(a, 1, 1, 1), Version2: true, PID: 1, TID: 1, Addr: base, Len: 1 << 20, Prot: 5, Filename: busy},
		&perfdata.Sample{Common: common(a, 1, 1, 2), IP: leaf, Period: 1},
		&perfdata.FinishedRound{}, // a place to split the file
		&perfdata.Sample{Common: common(a, 1, 2, 3), IP: base, Period: 1, Callchain: []uint64{perfdata.CallchainUser, base, leaf}},
	}
	f := synthWith(t, a, recs)
	sameInParts(t, f)

	p, err := Load(f, Options{Lines: true})
	if err != nil {
		t.Fatal(err)
	}
	var asIP, asReturn int32 = -1, -1
	for _, e := range p.Entries {
		stack := p.Stack(nil, e.Stack) // frames, leaf first
		switch tid := p.Threads[e.Thread].TID; {
		case tid == 1 && len(stack) == 1:
			asIP = stack[0]
		case tid == 2 && len(stack) == 2:
			asReturn = stack[1]
		}
	}
	if asIP < 0 || asReturn < 0 || asIP == asReturn {
		t.Fatalf("frames of %#x: %d as the IP, %d as a return address; want two", leaf, asIP, asReturn)
	}
	if p.FuncOf(asIP).Name != "work_a" || p.FuncOf(asReturn).Name != "work_a" {
		t.Errorf("functions %q and %q, want work_a for both", p.FuncOf(asIP).Name, p.FuncOf(asReturn).Name)
	}
}
