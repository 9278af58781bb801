package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jitprof/jitprof/jitlog"
)

// Go versions of the programs, to check the generated code against.
var reference = map[string]func(n uint64) uint64{
	"fib": func(n uint64) uint64 {
		a, b := uint64(0), uint64(1)
		for range n {
			a, b = b, a+b
		}
		return a
	},
	"sum_squares": func(n uint64) uint64 {
		var s uint64
		for i := range n {
			s += i * i
		}
		return s
	},
	"collatz": func(n uint64) uint64 {
		var steps uint64
		for k := uint64(1); k <= n; k++ {
			for x := k; x != 1; steps++ {
				if x%2 == 0 {
					x /= 2
				} else {
					x = 3*x + 1
				}
			}
		}
		return steps
	},
	"xorshift": func(n uint64) uint64 {
		x := uint64(88172645)
		for range n {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
		return x
	},
}

func newTestCache(t *testing.T) *cache {
	t.Helper()
	c, err := newCache(numSlots, slotSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

func TestProgramsComputeTheirFunctions(t *testing.T) {
	c := newTestCache(t)
	tests := []struct {
		prog Program
		args []uint64
	}{
		{fib, []uint64{0, 1, 2, 10, 90, 93, 94, 1000, 123456}}, // fib(94) overflows uint64
		{sumSquares, []uint64{0, 1, 2, 3, 10, 1 << 20, 3_000_001}},
		{sumSquaresReduced, []uint64{0, 1, 2, 3, 10, 1 << 20, 3_000_001}},
		{collatz, []uint64{0, 1, 2, 3, 27, 1000, 100_000}},
		{xorshift, []uint64{0, 1, 2, 1000, 1 << 20}},
	}
	for _, tt := range tests {
		code, err := Compile(tt.prog)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.write(0, code); err != nil {
			t.Fatal(err)
		}
		for _, n := range tt.args {
			if got, want := c.call(0, n), reference[tt.prog.Name](n); got != want {
				t.Errorf("%s(%d) = %d, want %d", tt.prog.Name, n, got, want)
			}
		}
	}
}

func TestSlotReuse(t *testing.T) {
	c := newTestCache(t)
	lg, err := jitlog.Open(jitlog.Options{Dir: t.TempDir(), Name: "minijit-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	seen := map[uint64]bool{}
	var addr0 uintptr
	var prev []byte
	for i, p := range []Program{fib, collatz, fib, sumSquares, sumSquaresReduced} {
		code, err := Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		addr, err := c.write(1, code)
		if err != nil {
			t.Fatal(err)
		}
		seq, err := lg.CodeLoad(addr, len(code), p.Name, &jitlog.Load{Code: code})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			addr0 = addr
		}
		if addr != addr0 || addr != c.addr(1) || addr == c.addr(0) {
			t.Errorf("load %d (%s) at %#x, want slot 1 at %#x", i, p.Name, addr, addr0)
		}
		if seen[seq] {
			t.Errorf("load %d (%s): seq %d issued twice", i, p.Name, seq)
		}
		seen[seq] = true
		// Read the slot back through the address the code runs at.
		mem := c.mem[addr-c.addr(0):][:slotSize]
		if !bytes.Equal(mem[:len(code)], code) || len(bytes.TrimLeft(mem[len(code):], "\xcc")) != 0 {
			t.Errorf("load %d (%s): slot holds % x, want the code then int3", i, p.Name, mem)
		}
		// Each load differs from the one before, even sum_squares from itself.
		if i > 0 && bytes.Equal(mem, prev) {
			t.Errorf("load %d (%s): slot bytes did not change", i, p.Name)
		}
		prev = bytes.Clone(mem)
		if got, want := c.call(1, 1000), reference[p.Name](1000); got != want {
			t.Errorf("load %d: %s(1000) = %d, want %d", i, p.Name, got, want)
		}
	}
}

// readTruth reads the JSON that -truth writes.
func readTruth(t *testing.T, path string) *Truth {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var truth Truth
	if err := json.Unmarshal(b, &truth); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &truth
}

// A run splits its CPU time as the schedule says, its code computes the
// right answers, and its jitlog database tells the story of every slot.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	truthPath := filepath.Join(dir, "truth.json")
	const d = 300 * time.Millisecond
	var out bytes.Buffer
	if err := runMain(options{Duration: d, JitlogDir: dir}, truthPath, &out); err != nil {
		t.Fatal(err)
	}
	truth := readTruth(t, truthPath)
	if truth.PID != os.Getpid() {
		t.Errorf("pid %d, want %d", truth.PID, os.Getpid())
	}
	if truth.CPUNs < d.Nanoseconds() || truth.CPUNs > 2*d.Nanoseconds() {
		t.Errorf("JIT CPU time %v, want %v and not much more", time.Duration(truth.CPUNs), d)
	}
	var want []run
	for _, ph := range schedule {
		want = append(want, ph.Runs...)
	}
	if len(truth.Generations) != len(want) {
		t.Fatalf("%d generations, want %d:\n%s", len(truth.Generations), len(want), out.String())
	}
	slotAddr := map[int]uint64{}
	var cpu int64
	for i, g := range truth.Generations {
		if g.Name != want[i].Prog.Name || g.Slot != want[i].Slot {
			t.Errorf("generation %d is %s in slot %d, want %s in slot %d", i, g.Name, g.Slot, want[i].Prog.Name, want[i].Slot)
		}
		if a, ok := slotAddr[g.Slot]; ok && a != g.Addr {
			t.Errorf("%s seq %d at %#x, want slot %d's address %#x", g.Name, g.Seq, g.Addr, g.Slot, a)
		}
		slotAddr[g.Slot] = g.Addr
		// One call is at most 1/2000 of the run, so the split is exact
		// to far better than this by construction.
		if math.Abs(g.Share-g.Target) > 0.5 {
			t.Errorf("%s seq %d: %.2f%% of JIT time, want %.2f%%", g.Name, g.Seq, g.Share, g.Target)
		}
		if g.Result != reference[g.Name](g.Arg) {
			t.Errorf("%s seq %d: result %d on %d, want %d", g.Name, g.Seq, g.Result, g.Arg, reference[g.Name](g.Arg))
		}
		if !strings.Contains(out.String(), fmt.Sprintf("%#x", g.Addr)) {
			t.Errorf("summary does not say where %s seq %d is:\n%s", g.Name, g.Seq, out.String())
		}
		cpu += g.CPUNs
	}
	if cpu != truth.CPUNs {
		t.Errorf("generations add up to %d ns, run to %d ns", cpu, truth.CPUNs)
	}
	checkJitlog(t, jitlog.DatabasePath(dir, truth.PID), truth)
}

// checkJitlog reads the database of a run back: one load per generation
// with its code, one unload each before its slot is re-used, and one
// enter/exit pair per call.
func checkJitlog(t *testing.T, path string, truth *Truth) {
	t.Helper()
	recs, err := jitlog.Read(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	gens := map[uint64]Generation{}
	for _, g := range truth.Generations {
		gens[g.Seq] = g
	}
	loaded := map[uint64]bool{}
	unloaded := map[uint64]bool{}
	inSlot := map[uint64]uint64{} // address -> seq of the live generation
	enters := map[uint64]int{}
	exits := 0
	for _, rec := range recs {
		switch r := rec.(type) {
		case *jitlog.LoadRecord:
			g, ok := gens[r.Seq]
			if !ok || loaded[r.Seq] {
				t.Errorf("load of seq %d (%s): not one load per generation", r.Seq, r.Name)
				continue
			}
			loaded[r.Seq] = true
			if r.Name != g.Name || r.Addr != g.Addr || r.Size != uint64(g.Size) || len(r.Code) != g.Size {
				t.Errorf("load seq %d: %s at %#x, %d bytes, %d of code; want %s at %#x, %d bytes", r.Seq, r.Name, r.Addr, r.Size, len(r.Code), g.Name, g.Addr, g.Size)
			}
			if old, busy := inSlot[r.Addr]; busy {
				t.Errorf("seq %d loaded at %#x before seq %d there was unloaded", r.Seq, r.Addr, old)
			}
			inSlot[r.Addr] = r.Seq
		case *jitlog.UnloadRecord:
			g := gens[r.Seq]
			if !loaded[r.Seq] || unloaded[r.Seq] || inSlot[g.Addr] != r.Seq {
				t.Errorf("unload of seq %d: not the live generation at its address", r.Seq)
			}
			unloaded[r.Seq] = true
			delete(inSlot, g.Addr)
		case *jitlog.EnterRecord:
			if !loaded[r.Seq] || unloaded[r.Seq] {
				t.Errorf("enter of seq %d while it is not loaded", r.Seq)
			}
			enters[r.Seq]++
		case *jitlog.ExitRecord:
			exits++
		}
	}
	calls := 0
	for _, g := range truth.Generations {
		if !loaded[g.Seq] || !unloaded[g.Seq] {
			t.Errorf("%s seq %d: loaded %v, unloaded %v; want both", g.Name, g.Seq, loaded[g.Seq], unloaded[g.Seq])
		}
		if enters[g.Seq] != g.Calls {
			t.Errorf("%s seq %d: %d enters, want one per call, %d", g.Name, g.Seq, enters[g.Seq], g.Calls)
		}
		calls += g.Calls
	}
	if exits != calls {
		t.Errorf("%d exits, want %d", exits, calls)
	}
}

// BenchmarkCall measures the cost of calling generated code from Go
// through the trampoline, with a function that returns at once.
func BenchmarkCall(b *testing.B) {
	c, err := newCache(numSlots, slotSize)
	if err != nil {
		b.Fatal(err)
	}
	defer c.close()
	code, err := Compile(fib)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.write(0, code); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c.call(0, 0)
	}
}
