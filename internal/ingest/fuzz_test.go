package ingest

import (
	"encoding/binary"
	"testing"

	"github.com/jitprof/jitprof/perfdata"
)

// FuzzUnwindStacks counts hostile --call-graph dwarf samples the
// daemon's way (Keep, Round) into a session: each takes from the input
// a pc and stack pointer (near the test process's code and JIT code, or
// anywhere), registers of any number, a callchain, and a stack copy of
// any size whose dyn_size may claim more than it has. Counting must not
// panic, every sample is counted or unresolved, and every chain is
// unwound once.
func FuzzUnwindStacks(f *testing.F) {
	seed := func(words ...uint64) []byte {
		var b []byte
		for _, w := range words {
			b = binary.LittleEndian.AppendUint64(b, w)
		}
		return b
	}
	f.Add(seed(0, 0x10, 0x7ffd0000, 20, 2, 16, appStart+0x500, 0))
	f.Add(seed(1, 0x110, 0x7ffd0000, 20, 0, 64, jitStart+0x150, appStart+0x500, 0))
	f.Add(seed(2, 0x10, 0x7ffd0000, 3, 1, 1<<20, 1, 2, 3))
	// One session for all inputs: a new one each costs more than the
	// input.
	ing, _, _ := newTestIngest(f)
	ing.CallGraph, ing.Unwind = true, true
	code := &ing.pid(testPID).jit.code
	code.tableLimit = maxJITTablesPerProcess
	code.setUnwind(code.bySeq[9], codeEHFrame(0x100))
	f.Fuzz(func(t *testing.T, in []byte) {
		samples, chains := ing.Samples, ing.UnwindStats().Chains
		word := func() uint64 {
			if len(in) < 8 {
				in = nil
				return 0
			}
			w := binary.LittleEndian.Uint64(in)
			in = in[8:]
			return w
		}
		attr := &perfdata.Attr{SampleType: perfdata.SampleTime | perfdata.SampleCallchain | perfdata.SampleRegsUser | perfdata.SampleStackUser, SampleRegsUser: 0xff0fff}
		n := uint64(0)
		for len(in) > 0 && n < 64 {
			n++
			base := []uint64{appStart, jitStart, 0}[word()%3]
			ip, sp := base+word()%0x20000, word()
			s := sample(ip, 1500, false)
			s.Attr, s.RegsUserABI = attr, 2
			for range word() % 32 {
				s.RegsUser = append(s.RegsUser, word())
			}
			if len(s.RegsUser) > 8 {
				s.RegsUser[7], s.RegsUser[8] = sp, ip
			}
			for range word() % 4 {
				s.Callchain = append(s.Callchain, word())
			}
			s.StackDyn = word()
			for range word() % 64 {
				s.StackUser = binary.LittleEndian.AppendUint64(s.StackUser, word())
			}
			ing.Keep(s)
		}
		ing.Round(nil)
		if ing.Samples-samples != n || ing.Errors != 0 {
			t.Fatalf("%d samples counted, %d errors; want %d, 0", ing.Samples-samples, ing.Errors, n)
		}
		if c := ing.UnwindStats().Chains - chains; c > n {
			t.Fatalf("%d chains unwound of %d samples", c, n)
		}
	})
}
