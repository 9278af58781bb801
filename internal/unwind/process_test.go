package unwind

import (
	"encoding/binary"
	"os"
	"slices"
	"testing"

	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/symbolize"
)

// lookupOnly hides a Tracker's epochs: a Walker then finds every
// address anew, as it did before it kept what it found across samples.
type lookupOnly struct{ t *process.Tracker }

func (l lookupOnly) Lookup(pid uint32, addr, time uint64, kernel bool) *process.Mapping {
	return l.t.Lookup(pid, addr, time, kernel)
}

// TestWalkerKeepsRowsByEpoch: what a Walker keeps of an address across
// samples holds only within the epoch it was found in. libc is mapped
// at an address, then libm over it: samples at the same pcs, before and
// after, taken in turns, must unwind with the rows of the image mapped
// at their time, as a Walker that keeps nothing unwinds them.
func TestWalkerKeepsRowsByEpoch(t *testing.T) {
	const libc, libm = "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6"
	for _, p := range []string{libc, libm} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s: %v (Debian's libc6 has both)", p, err)
		}
	}
	t.Setenv("JITPROF_CACHE_DIR", t.TempDir())
	const pid, base, size = 7, 0x7f0000000000, 1 << 20
	tr := process.New()
	tr.Map(process.Mapping{PID: pid, Start: base, End: base + size, Path: libc, Time: 10, Exec: true})
	tr.Map(process.Mapping{PID: pid, Start: base, End: base + size, Path: libm, Time: 20, Exec: true})
	tr.Settle()
	sym := symbolize.New(symbolize.Options{})
	keeping := New(Options{Symbolizer: sym, Procs: tr}).Walker()
	fresh := New(Options{Symbolizer: sym, Procs: lookupOnly{tr}}).Walker()
	if keeping.known == nil || fresh.known != nil {
		t.Fatal("the Walker of a Tracker should keep rows by epoch, the other not")
	}
	// A stack of words that are mostly return addresses into the
	// mapping, so that chains run on for some frames in either image.
	const sp = 0x7ffd00000000
	data := make([]byte, 4096)
	x := uint64(1)
	for i := 0; i < len(data); i += 8 {
		x = x*6364136223846793005 + 1442695040888963407
		binary.LittleEndian.PutUint64(data[i:], base+0x1000+(x>>20)%(size-0x1000))
	}
	stack := &Stack{Data: data, Addr: sp}
	differ := 0
	for pc := uint64(base + 0x28000); pc < base+size; pc += 0x1ff3 {
		var got [2][]uint64
		for i, time := range []uint64{15, 25, 15, 25} {
			regs := regsOf(pc, sp, sp+64)
			k, ks := keeping.Unwind(pid, time, regs, stack, nil)
			f, fs := fresh.Unwind(pid, time, regs, stack, nil)
			if !slices.Equal(k, f) || ks != fs {
				t.Fatalf("pc %#x at %d: kept rows give %#x (%v), found anew %#x (%v)", pc, time, k, ks, f, fs)
			}
			got[i%2] = k
		}
		if !slices.Equal(got[0], got[1]) {
			differ++
		}
	}
	// Otherwise rows kept across the epochs would go unnoticed.
	if differ == 0 {
		t.Error("no pc unwinds differently in libc and libm: the test shows nothing")
	}
	t.Logf("%d pcs unwind differently in the two images", differ)
}
