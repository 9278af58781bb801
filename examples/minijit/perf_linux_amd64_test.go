package main

import (
	"debug/elf"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/jitlog"
	"github.com/jitprof/jitprof/perfdata"
)

// buildMinijit builds the command, as a user would run it.
func buildMinijit(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "minijit")
	perftest.Run(t, perftest.Need(t, "go"), "build", "-o", bin, ".")
	return bin
}

// span is a live generation: code [lo, hi) from load to unload, on the
// CLOCK_MONOTONIC clock that perf record -k 1 stamps samples with.
type span struct {
	seq, lo, hi, from, to uint64
}

// spans reads the generations of a run from its jitlog database.
func spans(t *testing.T, path string) []span {
	t.Helper()
	recs, err := jitlog.Read(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []span
	for _, rec := range recs {
		switch r := rec.(type) {
		case *jitlog.LoadRecord:
			out = append(out, span{seq: r.Seq, lo: r.Addr, hi: r.Addr + r.Size, from: r.Time, to: math.MaxUint64})
		case *jitlog.UnloadRecord:
			for i := range out {
				if out[i].seq == r.Seq {
					out[i].to = r.Time
				}
			}
		}
	}
	return out
}

// symbolRange is where the function whose ELF symbol starts with name is.
func symbolRange(t *testing.T, bin, name string) (lo, hi uint64) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if strings.HasPrefix(s.Name, name) && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			return s.Value, s.Value + s.Size
		}
	}
	t.Fatalf("%s has no symbol %s", bin, name)
	return 0, 0
}

// Under Linux perf, minijit's samples land in its generated code, split
// between generations as its truth says, and its frame pointers lead back
// into Go. perf's own jitdump support names every generation too.
func TestPerf(t *testing.T) {
	perf := perftest.Perf(t)
	bin := buildMinijit(t)
	dir := t.TempDir()
	truthPath := filepath.Join(dir, "truth.json")
	data := perftest.Record(t, "perf.data", "-e", "cpu-clock", "-k", "1", "-g", "--",
		bin, "-quiet", "-duration", "2s", "-jitdump", "-jitlog-dir", dir, "-truth", truthPath)
	truth := readTruth(t, truthPath)
	gens := spans(t, jitlog.DatabasePath(dir, truth.PID))
	if len(gens) != len(truth.Generations) {
		t.Fatalf("jitlog has %d loads, truth %d generations", len(gens), len(truth.Generations))
	}
	callLo, callHi := symbolRange(t, bin, "main.callJIT")
	runLo, runHi := symbolRange(t, bin, "main.(*runner).call")

	f, err := perfdata.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total, inJIT, stray, walked int
	bySeq := map[uint64]int{}
	r := f.Records()
	for r.Next() {
		s, ok := r.Record().(*perfdata.Sample)
		// User space only: on a loaded machine the kernel's share of a
		// process (interrupts, scheduling) grows with the load, not with
		// anything minijit does.
		if !ok || int(s.PID) != truth.PID || s.CPUMode() != perfdata.MiscUser {
			continue
		}
		total++
		switch seq, inSlot := liveAt(gens, s); {
		case seq != 0:
			bySeq[seq]++
			inJIT++
			walked += walksIntoGo(s.Callchain, callLo, callHi, runLo, runHi)
		case inSlot:
			stray++
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d user-space samples in generated code, %d of them walk into Go", inJIT, total, walked)
	// Go's runtime and the clock reads around each call cost well under 1%.
	if inJIT < total*9/10 {
		t.Fatalf("%d of minijit's %d user-space samples in generated code, want 90%% or more", inJIT, total)
	}
	if stray > 0 {
		t.Errorf("%d samples in a slot when no generation was loaded there", stray)
	}
	// A sample at a generated function's push rbp, or after its pop rbp,
	// cannot see its caller; nothing else should lose the way.
	if walked < inJIT*95/100 {
		t.Errorf("%d of %d samples in generated code have a call chain through callJIT into runner.call, want 95%%", walked, inJIT)
	}
	ours := map[uint64]float64{}
	for seq, n := range bySeq {
		ours[seq] = 100 * float64(n) / float64(inJIT)
	}
	compareSplit(t, "samples by jitlog generation", truth, ours)
	compareSplit(t, "perf inject --jit; perf report", truth, perfSplit(t, perf, data, truth))
}

// liveAt is the generation live at s's address and time, 0 if none, and
// whether s is in any generation's code at all.
func liveAt(gens []span, s *perfdata.Sample) (seq uint64, inSlot bool) {
	for _, g := range gens {
		if s.IP >= g.lo && s.IP < g.hi {
			inSlot = true
			if s.Time >= g.from && s.Time < g.to {
				return g.seq, true
			}
		}
	}
	return 0, inSlot
}

// walksIntoGo is 1 if chain goes from callJIT [callLo, callHi) on to the Go
// function [runLo, runHi) that called it, else 0.
func walksIntoGo(chain []uint64, callLo, callHi, runLo, runHi uint64) int {
	sawCall := false
	for _, pc := range chain {
		switch {
		case pc >= callLo && pc < callHi:
			sawCall = true
		case sawCall && pc >= runLo && pc < runHi:
			return 1
		}
	}
	return 0
}

// perfSplit is the split of JIT samples between generations by perf
// report after perf inject --jit, which makes one jitted-PID-N.so per code
// load; jitlog's jitdump uses the sequence number as N.
func perfSplit(t *testing.T, perf, data string, truth *Truth) map[uint64]float64 {
	t.Helper()
	jitted := data + ".jit"
	perftest.Run(t, perf, "inject", "--jit", "-i", data, "-o", jitted)
	out := perftest.Run(t, perf, "report", "-i", jitted, "--stdio", "-q", "--no-children", "--sort", "dso,sym", "-t", "|")
	names := map[uint64]string{}
	for _, g := range truth.Generations {
		names[g.Seq] = g.Name
	}
	prefix := fmt.Sprintf("jitted-%d-", truth.PID)
	split := map[uint64]float64{}
	sum, user := 0.0, 0.0
	for line := range strings.Lines(out) {
		f := strings.Split(line, "|")
		if len(f) != 3 {
			continue
		}
		dso, sym := strings.TrimSpace(f[1]), strings.TrimSpace(f[2])
		pct, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(f[0]), "%"), 64)
		if err != nil {
			continue // a line of a call graph
		}
		if strings.HasPrefix(sym, "[.] ") {
			user += pct
		}
		seqText, ok := strings.CutPrefix(strings.TrimSuffix(dso, ".so"), prefix)
		if !ok {
			continue
		}
		seq, err := strconv.ParseUint(seqText, 10, 64)
		if err != nil {
			t.Fatalf("perf report line %q: %v", line, err)
		}
		if sym != "[.] "+names[seq] {
			t.Errorf("perf report names %s %q, want %q", dso, sym, names[seq])
		}
		split[seq] += pct
		sum += pct
	}
	// Of user space, as above: the kernel's share grows with the load.
	if sum < 0.9*user {
		t.Fatalf("perf report puts %.2f%% of samples in jitted code, of %.2f%% in user space; want 90%% of it or more:\n%s", sum, user, out)
	}
	for seq := range split {
		split[seq] *= 100 / sum
	}
	return split
}

// compareSplit checks a profile's percent of JIT time per generation
// against the truth: within 2 points, the bar the report must meet.
func compareSplit(t *testing.T, what string, truth *Truth, got map[uint64]float64) {
	t.Helper()
	for _, g := range truth.Generations {
		d := got[g.Seq] - g.Share
		t.Logf("%s: %-11s seq %d: %6.2f%%, truth %6.2f%%, %+.2f", what, g.Name, g.Seq, got[g.Seq], g.Share, d)
		if math.Abs(d) > 2 {
			t.Errorf("%s: %s seq %d has %.2f%% of JIT samples, truth %.2f%%", what, g.Name, g.Seq, got[g.Seq], g.Share)
		}
	}
}
