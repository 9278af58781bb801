package main

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

// pypyDriver runs the functions the program defines for their share of
// CPU time (budget, seconds), a chunk at a time, always the one furthest
// behind its budget, and writes the CPU time each really took, by
// time.process_time, to argv[1]. So at every moment of the run each
// function has had its share of the time so far, and a stretch of it
// (a slow spell of a loaded machine, or the samples a daemon that fell
// behind lost) takes from each its share. Run in turn until each was
// done, they were not: the functions with the shorter chunks ran alone
// at the end, and a daemon that lost a second of samples under a CPU
// hog moved two functions' shares by 7 points. Chunks of about 10 ms
// here, so that the driver's loop stays below PyPy's JIT threshold
// (1039 iterations) on a machine a few times faster.
const pypyDriver = `
import json, sys, time
spent = {k: 0.0 for k in budget}
while True:
    k = min(budget, key=lambda k: spent[k] / budget[k])
    if spent[k] >= budget[k]:
        break
    t0 = time.process_time()
    work[k]()
    spent[k] += time.process_time() - t0
with open(sys.argv[1], "w") as f:
    json.dump(spent, f)
`

// pypyFlat has three loops of different shapes, none with a bridge.
const pypyFlat = `
def ints(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s

def floats(n):
    x = 0.0
    for i in range(n):
        x = x * 0.999 + i * 0.5
    return x

def lists(n, data):
    s = 0
    for i in range(n):
        s += data[i & 1023]
    return s

data = list(range(1024))
budget = {"ints": 0.6, "floats": 0.4, "lists": 0.25}
work = {"ints": lambda: ints(6000000), "floats": lambda: floats(4000000), "lists": lambda: lists(6000000, data)}
`

// pypyBridges has a loop whose other branch becomes a hot bridge, beside
// a plain loop: the bridge's time belongs to its loop's function.
const pypyBridges = `
def branchy(n):
    s = 0
    for i in range(n):
        if i % 3 == 0:
            s += 1
        else:
            s -= i & 7
    return s

def ints(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s

budget = {"branchy": 0.7, "ints": 0.45}
work = {"branchy": lambda: branchy(6000000), "ints": lambda: ints(6000000)}
`

// TestPyPyLoops records real PyPy programs with their log, as a user
// would, and checks that report --pypylog names their loops (and
// bridges, under the function of their loop) with the share of CPU time
// each function measured itself, within 5 points.
func TestPyPyLoops(t *testing.T) {
	perftest.Perf(t) // the recorder needs perf_event_open, as perf does
	pypy := perftest.Need(t, "pypy3")
	jitprof, _ := buildTools(t)
	for _, tc := range []struct {
		name, program string
		bridges       bool
	}{
		{"flat", pypyFlat, false},
		{"bridges", pypyBridges, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			script, truthFile := filepath.Join(dir, "prog.py"), filepath.Join(dir, "truth.json")
			log, data := filepath.Join(dir, "pypy.log"), filepath.Join(dir, "perf.data")
			if err := os.WriteFile(script, []byte(tc.program+pypyDriver), 0o644); err != nil {
				t.Fatal(err)
			}
			rec := exec.Command(jitprof, "record", "-q", "-o", data, "--", pypy, script, truthFile)
			rec.Env = append(os.Environ(), "PYPYLOG=jit-backend-addr,jit-log-opt:"+log)
			if out, err := rec.CombinedOutput(); err != nil {
				t.Fatalf("jitprof record: %v\n%s", err, out)
			}
			var spent map[string]float64
			b, err := os.ReadFile(truthFile)
			if err == nil {
				err = json.Unmarshal(b, &spent)
			}
			if err != nil {
				t.Fatalf("the program's measurement: %v", err)
			}

			rep := exec.Command(jitprof, "report", "-i", data, "--anon-handler=pypy", "--pypylog", log, "-l", "--format", "csv")
			var stderr strings.Builder
			rep.Stderr = &stderr
			out, err := rep.Output()
			if err != nil {
				t.Fatalf("jitprof report: %v\n%s", err, stderr.String())
			}
			// jitprof record embedded the log: the copy wins over the file.
			if want := "JIT code named by pypy from pypy " + log + " (embedded in the recording), times by the recording's TSC calibration"; !strings.Contains(stderr.String(), want) {
				t.Errorf("report's stderr lacks %q:\n%s", want, stderr.String())
			}
			byFunc, all, bridges := pypyShares(t, string(out))

			var total, funcs float64
			for name, s := range spent {
				total += s
				funcs += byFunc[name]
			}
			// The loops must hold the program's time, not startup.
			if funcs < 50 {
				t.Fatalf("the functions' loops have %.1f%% of the samples, want most: %v (all: %v)", funcs, byFunc, all)
			}
			var worst float64
			for name, s := range spent {
				want, got := 100*s/total, 100*byFunc[name]/funcs
				if d := math.Abs(got - want); d > 5 {
					t.Errorf("%s: %.1f%% of the loops' samples, the program measured %.1f%%", name, got, want)
				} else {
					worst = max(worst, d)
				}
			}
			t.Logf("functions within %.2f points of the program's measurement %v; loops %v", worst, spent, all)
			if tc.bridges && bridges < 2 {
				t.Errorf("bridges have %.1f%% of the samples, want a hot one: %v", bridges, all)
			}
			for name := range byFunc {
				if _, ok := spent[name]; !ok && byFunc[name] > 1 {
					t.Errorf("the report names %q (%.1f%%), a function the program does not run hot", name, byFunc[name])
				}
			}

			// The recording carries the log's address and trace sections
			// (record read PYPYLOG from the command's environment): with
			// the log gone, a plain --anon-samples report names the same
			// loops with the same shares.
			if err := os.Remove(log); err != nil {
				t.Fatal(err)
			}
			rep = exec.Command(jitprof, "report", "-i", data, "--anon-samples", "-l", "--format", "csv")
			stderr.Reset()
			rep.Stderr = &stderr
			out2, err := rep.Output()
			if err != nil {
				t.Fatalf("jitprof report without the log: %v\n%s", err, stderr.String())
			}
			if want := "JIT code named by pypy from pypy " + log + " (embedded in the recording)"; !strings.Contains(stderr.String(), want) {
				t.Errorf("report's stderr lacks %q:\n%s", want, stderr.String())
			}
			_, all2, _ := pypyShares(t, string(out2))
			for sym, pc := range all {
				if d := math.Abs(all2[sym] - pc); d > 0.01 {
					t.Errorf("%s: %.2f%% from the embedded log, %.2f%% from the file", sym, all2[sym], pc)
				}
			}
			checkLoopView(t, jitprof, data, all)
		})
	}
}

// pypyShares returns, from a report -l CSV, the per cent of samples per
// Python function in PyPy's JIT code (loops and bridges together), per
// symbol, and the share of bridges.
func pypyShares(t *testing.T, out string) (byFunc, all map[string]float64, bridges float64) {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("report CSV: %v\n%s", err, out)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	byFunc, all = map[string]float64{}, map[string]float64{}
	for _, r := range rows[1:] {
		if !strings.HasPrefix(r[col["dso"]], "[JIT pypy]") {
			continue
		}
		pc, err := strconv.ParseFloat(r[col["self_percent"]], 64)
		if err != nil {
			t.Fatalf("report CSV row %v: %v", r, err)
		}
		sym := strings.TrimPrefix(r[col["sym"]], "[.] ")
		fn, kind, ok := strings.Cut(sym, " [")
		if !ok {
			t.Errorf("JIT code named %q, not FUNCTION [loop N] or [bridge M of loop N]", sym)
			continue
		}
		all[sym] += pc
		byFunc[fn] += pc
		if strings.HasPrefix(kind, "bridge") {
			bridges += pc
		}
	}
	return byFunc, all, bridges
}

// checkLoopView runs jitprof pypy loops on a recording whose report gave
// shares (of all samples: the recording is of PyPy alone) and checks that
// the view charges each loop and bridge the same, puts every bridge under
// the loop it belongs to, and marks the hot operations of each trace.
func checkLoopView(t *testing.T, jitprof, data string, shares map[string]float64) {
	t.Helper()
	out, err := exec.Command(jitprof, "pypy", "loops", "-i", data, "--format", "json", "--percent-limit", "0").CombinedOutput()
	if err != nil {
		t.Fatalf("jitprof pypy loops: %v\n%s", err, out)
	}
	var v struct {
		Samples uint64
		Loops   []struct {
			Name    string
			Samples uint64
			Percent float64
			Source  string
			Ops     []struct{ Samples uint64 }
			Bridges []struct {
				Name    string
				Percent float64
				Leaves  string
			}
		}
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("pypy loops JSON: %v\n%s", err, out)
	}
	seen := map[string]float64{}
	for _, l := range v.Loops {
		seen[l.Name] = l.Percent
		var inOps uint64
		for _, op := range l.Ops {
			inOps += op.Samples
		}
		if l.Samples > 20 && (inOps == 0 || inOps > l.Samples || !strings.Contains(l.Source, "prog.py:")) {
			t.Errorf("loop %s: %d samples, %d of them at operations, source %q", l.Name, l.Samples, inOps, l.Source)
		}
		for _, b := range l.Bridges {
			seen[b.Name] = b.Percent
			loopFn, _, _ := strings.Cut(l.Name, " [")
			if !strings.HasPrefix(b.Name, loopFn+" [bridge") || b.Leaves == "" {
				t.Errorf("bridge %s (leaving %q) under loop %s", b.Name, b.Leaves, l.Name)
			}
		}
	}
	for sym, pc := range shares {
		if d := math.Abs(seen[sym] - pc); d > 0.01 {
			t.Errorf("%s: %.2f%% in the loop view, %.2f%% in the report", sym, seen[sym], pc)
		}
	}
}

// pypyLibrary has functions whose loops spend much of their time in
// libpypy and the kernel on their behalf (allocation, string joins)
// beside one that stays in its loop (ints).
const pypyLibrary = `
def ints(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s

def allocs(n):
    keep = []
    for i in range(n):
        keep.append([i, i + 1, i + 2, str(i)])
        if len(keep) > 1000:
            keep = []
    return len(keep)

def joins(n):
    s = 0
    for i in range(n):
        s += len("-".join([str(i), str(i + 1), "x" * (i & 63)]))
    return s

budget = {"ints": 0.5, "allocs": 0.5, "joins": 0.5}
work = {"ints": lambda: ints(5000000), "allocs": lambda: allocs(200000), "joins": lambda: joins(200000)}
`

// TestPyPyDWARF records a PyPy program whose functions spend their time
// in libpypy and the kernel as much as in their loops, with DWARF call
// graphs: the samples in libpypy unwind (with its .eh_frame, and out of
// PyPy's helper stubs by their return address) to the loop that called
// it, so that each function's loops' inclusive share (--children) is
// the share of CPU time the program measured itself, within 5 points.
// Self shares alone give allocs and joins a fraction of theirs.
func TestPyPyDWARF(t *testing.T) {
	perftest.Perf(t)
	pypy := perftest.Need(t, "pypy3")
	jitprof, _ := buildTools(t)
	dir := t.TempDir()
	script, truthFile := filepath.Join(dir, "prog.py"), filepath.Join(dir, "truth.json")
	log, data := filepath.Join(dir, "pypy.log"), filepath.Join(dir, "perf.data")
	if err := os.WriteFile(script, []byte(pypyLibrary+pypyDriver), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := exec.Command(jitprof, "record", "-q", "--call-graph", "dwarf", "-o", data, "--", pypy, script, truthFile)
	rec.Env = append(os.Environ(), "PYPYLOG=jit-backend-addr,jit-log-opt:"+log)
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("jitprof record: %v\n%s", err, out)
	}
	var spent map[string]float64
	b, err := os.ReadFile(truthFile)
	if err == nil {
		err = json.Unmarshal(b, &spent)
	}
	if err != nil {
		t.Fatalf("the program's measurement: %v", err)
	}
	out := runOK(t, jitprof, "report", "-i", data, "--anon-handler=pypy", "--pypylog", log, "--children", "-s", "sym", "-g", "none", "--format", "csv")
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("report CSV: %v\n%s", err, out)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	// A chain holds one frame of PyPy's JIT code at most (it stops in
	// the loop's frame, which has neither unwinding information nor a
	// frame pointer), so a function's loops' children shares add up.
	children, self := map[string]float64{}, map[string]float64{}
	for _, r := range rows[1:] {
		fn, _, ok := strings.Cut(r[col["sym"]], " [")
		if _, hot := spent[fn]; !ok || !hot || !strings.Contains(r[col["sym"]], "loop ") {
			continue
		}
		c, _ := strconv.ParseFloat(r[col["children_percent"]], 64)
		s, _ := strconv.ParseFloat(r[col["self_percent"]], 64)
		children[fn] += c
		self[fn] += s
	}
	var total, funcs float64
	for name, s := range spent {
		total += s
		funcs += children[name]
	}
	if funcs < 50 {
		t.Fatalf("the functions' loops have %.1f%% of the samples under --children, want most: %v", funcs, children)
	}
	// 1.5 s of CPU at 4 kHz: about 6,000 samples, a third each, a
	// binomial deviation of 0.6 points; the 5 points allowed are eight of
	// them, and the JIT's warm-up, which the program measures but its
	// loops do not yet run, is the rest.
	for name, s := range spent {
		want, got := 100*s/total, 100*children[name]/funcs
		if d := math.Abs(got - want); d > 5 {
			t.Errorf("%s: its loops have %.1f%% of the functions' inclusive samples, the program measured %.1f%%", name, got, want)
		}
	}
	// Without the chains, allocs' loops hold a fraction of its time.
	if self["allocs"] > children["allocs"]/2 {
		t.Errorf("allocs: self %.1f%%, children %.1f%%: want most of its time in libpypy and the kernel", self["allocs"], children["allocs"])
	}
	t.Logf("measured %v; children %v; self %v", spent, children, self)
}
