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

// pypyPid has the program write its pid to argv[2], so that the test
// picks its samples from the daemon's, which are every process's (the
// machine may run other PyPys with the same functions).
const pypyPid = `
import os
with open(sys.argv[2], "w") as f:
    f.write(str(os.getpid()))
`

// TestDaemonPyPy: a daemon started with -g dwarf, sampling every CPU,
// finds a PyPy's log by the PYPYLOG it was started with, follows it as
// PyPy writes it, and names PyPy's loops in its session; the samples in
// libpypy and the kernel unwind out of PyPy's helper stubs into the loops
// that called them, so that each function's loops, counted with the arcs
// out of them (a chain holds one loop frame at most: it stops there),
// have the share of CPU time the program measured itself, within 5
// points, and the share jitprof record --call-graph dwarf of the same run
// gives under --children, within 5 points. Self samples alone give
// allocs and joins a fraction of theirs.
//
// Statistics: 3 s of the program's CPU at 1 kHz are about 3,000 samples
// in each sampling, fewer in the session when the daemon's rings lose
// some (at least 1,000 are asked for). The tolerance is worked out from
// the counts the session has: a share p of n samples has a standard
// deviation of sqrt(p(1-p)/n), the difference of two samplings of the
// run (the recording has at least as many) sqrt(2) of that. Four of
// those is the tolerance, plus, against what the program measured,
// warmUp for the JIT's warm-up, which the program measures and its loops
// do not yet run: 1.4 points, the 5 points allowed before less the four
// deviations at 3,000 samples (0.9 points each).
func TestDaemonPyPy(t *testing.T) {
	perftest.Perf(t)
	needRoot(t, "the daemon samples every CPU")
	pypy := perftest.Need(t, "pypy3")
	jitprof := buildJitprof(t, t.TempDir())
	dir := t.TempDir()
	script, truthFile, pidFile := filepath.Join(dir, "prog.py"), filepath.Join(dir, "truth.json"), filepath.Join(dir, "pid")
	data := filepath.Join(dir, "perf.data")
	prog := strings.Replace(pypyLibrary, `budget = {"ints": 0.5, "allocs": 0.5, "joins": 0.5}`, `budget = {"ints": 1.0, "allocs": 1.0, "joins": 1.0}`, 1)
	if prog == pypyLibrary {
		t.Fatal("the budget line of pypyLibrary changed")
	}
	if err := os.WriteFile(script, []byte(prog+pypyDriver+pypyPid), 0o644); err != nil {
		t.Fatal(err)
	}
	sessions := filepath.Join(t.TempDir(), "sessions")
	// 8 MiB rings, a second of samples with their 8 KiB stacks: a daemon
	// that reads the images of every process the loaded machine starts
	// falls behind for a while, and what its rings lose is a stretch of
	// time, which the program spends in one function or two (the
	// mappings a lost record told of are read again from /proc).
	// Thread separation keeps the PyPy's samples apart.
	startDaemon(t, jitprof, sessions, nil, "-a", "-F", "1000", "-m", "2048", "-g", "dwarf", "--separate", "thread,kernel")
	// A relative log, as a user in their project's directory names it:
	// the daemon finds it in the process's working directory.
	rec := exec.Command(jitprof, "record", "-q", "--call-graph", "dwarf", "-F", "1000", "-m", "512", "-o", data, "--", pypy, script, truthFile, pidFile)
	rec.Dir = dir
	rec.Env = append(os.Environ(), "PYPYLOG=jit-backend-addr,jit-log-opt:pypy.log")
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
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	daemonCmd(t, jitprof, sessions, "dump")
	status := daemonCmd(t, jitprof, sessions, "status")

	// The session: each loop's own samples and the arcs out of it.
	var graph struct {
		Events []struct {
			Functions []struct {
				Symbol, Image string
				Samples       uint64
				Callees       []struct{ Samples uint64 }
			}
		}
	}
	out := jpReport(t, jitprof, nil, "--session", "--session-dir", sessions, "--anon-samples", "-g", "--format", "json", "tgid:"+strings.TrimSpace(string(pid)))
	if err := json.Unmarshal([]byte(out), &graph); err != nil || len(graph.Events) != 1 {
		t.Fatalf("report --session -g --format json: %v, want one event:\n%s", err, out)
	}
	incl, self := map[string]float64{}, map[string]float64{}
	loops := 0
	for _, f := range graph.Events[0].Functions {
		fn, _, ok := strings.Cut(f.Symbol, " [")
		if _, hot := spent[fn]; !ok || !hot || !strings.Contains(f.Symbol, "loop ") {
			continue
		}
		if !strings.HasPrefix(f.Image, "[JIT pypy]") {
			t.Errorf("%s is in %s, want the pypy handler's image", f.Symbol, f.Image)
		}
		loops++
		self[fn] += float64(f.Samples)
		incl[fn] += float64(f.Samples)
		for _, c := range f.Callees {
			incl[fn] += float64(c.Samples)
		}
	}
	var sessionAll float64
	for name := range spent {
		sessionAll += incl[name]
	}
	if loops == 0 || sessionAll < 1000 {
		t.Fatalf("the session names %d loops of the program's functions, with %.0f samples and arcs: want its loops, with thousands\ndaemon status:\n%s\nreport:\n%s", loops, sessionAll, status, out)
	}

	// The recording's --children.
	csvOut := runOK(t, jitprof, "report", "-i", data, "--anon-samples", "--children", "-s", "sym", "-g", "none", "--format", "csv")
	rows, err := csv.NewReader(strings.NewReader(csvOut)).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("report CSV: %v\n%s", err, csvOut)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	children := map[string]float64{}
	var recAll float64
	for _, r := range rows[1:] {
		fn, _, ok := strings.Cut(r[col["sym"]], " [")
		if _, hot := spent[fn]; !ok || !hot || !strings.Contains(r[col["sym"]], "loop ") {
			continue
		}
		c, _ := strconv.ParseFloat(r[col["children_percent"]], 64)
		children[fn] += c
		recAll += c
	}
	var total float64
	for _, s := range spent {
		total += s
	}
	const warmUp = 1.4 // points
	for name, s := range spent {
		want, got, rec := 100*s/total, 100*incl[name]/sessionAll, 100*children[name]/max(recAll, 1)
		sigma := 100 * math.Sqrt(got/100*(1-got/100)/sessionAll)
		if d, tol := math.Abs(got-want), 4*sigma+warmUp; d > tol {
			t.Errorf("%s: its loops have %.1f%% of the functions' %.0f samples and arcs in the session, the program measured %.1f%%: %.1f points apart, more than %.1f\ndaemon status:\n%s", name, got, sessionAll, want, d, tol, status)
		}
		if d, tol := math.Abs(got-rec), 4*math.Sqrt2*sigma; d > tol {
			t.Errorf("%s: its loops have %.1f%% in the session (%.0f samples and arcs), %.1f%% of the recording's under --children: %.1f points apart, more than %.1f\ndaemon status:\n%s", name, got, sessionAll, rec, d, tol, status)
		}
	}
	if self["allocs"] > incl["allocs"]/2 {
		t.Errorf("allocs: self %.0f, with its arcs %.0f: want most of its time in libpypy and the kernel", self["allocs"], incl["allocs"])
	}
	t.Logf("measured %v; session: with arcs %v, self %v (%d loops); recording --children %v\n%s", spent, incl, self, loops, children, status)
}
