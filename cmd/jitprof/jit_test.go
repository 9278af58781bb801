package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

// buildTools builds jitprof (with jitprof-web) and minijit into a
// temporary directory.
func buildTools(t *testing.T) (jitprof, minijit string) {
	t.Helper()
	dir := t.TempDir()
	return buildJitprof(t, dir), builtCopy(t, "minijit", dir)
}

// TestMinijitGenerations is the demo as a test: jitprof records the
// bundled JIT, which re-generates different code at the same addresses,
// and report --anon-samples must name every generation of every function
// as the JIT's own log of its calls does (see checkGenerations).
func TestMinijitGenerations(t *testing.T) {
	perftest.Perf(t) // the recorder needs perf_event_open, as perf does
	jitprof, minijit := buildTools(t)
	data, env, truth := runMinijit(t, jitprof, minijit)
	checkGenerations(t, jitprof, data, env, "[JIT jitlog]", truth, sampledShares(t, jitprof, data, env), "--anon-samples")
}

// checkGenerations reports data with extra flags as CSV and checks the
// rows of the JIT image whose name starts with prefix: they name nothing
// but the generations of truth ("name [gen SEQ]" -> per cent of the JIT's
// CPU time, as the JIT measured it), each within 1 point of sampled (its
// share of the same samples, charged by time to the generation the JIT's
// log says was running: an independent way to the answer) and within 4
// points of truth.
//
// Why not 2 points of truth: on this project's VMs (paravirtualised, PVM)
// cpu-clock samples fall on some code at another rate than its CPU time;
// splitjit's 2-add loops get ~25% fewer samples than the thread CPU clock
// says they ran, in jitprof's profile as by time (2.6 points), with every
// call the same length. Samples are what a profiler has: sampled is the
// answer it must give exactly, truth a check of the whole experiment.
func checkGenerations(t *testing.T, jitprof, data string, env []string, prefix string, truth, sampled map[string]float64, flags ...string) {
	t.Helper()
	rep := exec.Command(jitprof, append([]string{"report", "-i", data, "-l", "--format", "csv"}, flags...)...)
	rep.Env = env
	var stderr strings.Builder
	rep.Stderr = &stderr
	out, err := rep.Output()
	if err != nil {
		t.Fatalf("jitprof report %s: %v\n%s", strings.Join(flags, " "), err, stderr.String())
	}
	compareGenerations(t, string(out), prefix, truth, sampled, 1)
}

// compareGenerations checks the rows of report CSV whose image starts
// with prefix: they name nothing but the generations of truth, each
// within tol points of sampled and 4 of truth (see checkGenerations).
func compareGenerations(t *testing.T, csv, prefix string, truth, sampled map[string]float64, tol float64) {
	t.Helper()
	// The truth is per cent of JIT time; the report's of all time. The
	// kernel's share is the machine's, not minijit's: on these VMs a
	// timer interrupt delayed by the hypervisor lands on the kernel's
	// irq-enable, 17% of minijit's samples in a daemon test at a load
	// average of 11 (JIT code 74% of all, 90% of user space's). So JIT
	// code is checked against the user-space samples, where minijit's Go
	// runtime and loop take the rest: JIT code left unnamed would be far
	// below 75% of them.
	got, jit := csvShares(t, csv, prefix)
	_, kernel := csvShares(t, csv, "[kernel.kallsyms]")
	if user := 100 - kernel; jit < 0.75*user {
		t.Fatalf("JIT code has %.1f%% of the samples, %.1f%% of user space's, want most of them: %v\n%s", jit, 100*jit/max(user, 1e-9), got, csv)
	}
	var worst, worstTruth float64
	for name, want := range truth {
		share := 100 * got[name] / jit
		if d := math.Abs(share - sampled[name]); d > tol {
			t.Errorf("%s: %.2f%% of JIT samples, %.2f%% of them by the JIT's log of its calls", name, share, sampled[name])
		} else {
			worst = max(worst, d)
		}
		if d := math.Abs(share - want); d > 4 {
			t.Errorf("%s: %.2f%% of JIT samples, the JIT measured %.2f%% of its CPU time", name, share, want)
		} else {
			worstTruth = max(worstTruth, d)
		}
		delete(got, name)
	}
	t.Logf("generations within %.2f points of the samples by the JIT's log, %.2f of the measured CPU time", worst, worstTruth)
	for name, pc := range got {
		t.Errorf("the report names %q (%.2f%%), which the JIT never generated", name, pc)
	}
}

// sampledShares charges data's samples of the JIT process to the
// generation its jitlog database (in env's JITPROF_JITLOG_DIR) says was
// running at their time, from its enter/exit events (jitprof pathtime
// -i), and returns "name [gen SEQ]" -> per cent of those samples in the
// generation's own code (pathtime's Self), as the report counts them.
func sampledShares(t *testing.T, jitprof, data string, env []string) map[string]float64 {
	t.Helper()
	var dir string
	for _, e := range env {
		if d, ok := strings.CutPrefix(e, "JITPROF_JITLOG_DIR="); ok {
			dir = d
		}
	}
	dbs, _ := filepath.Glob(filepath.Join(dir, "anon.*"))
	if len(dbs) != 1 {
		t.Fatalf("jitlog databases in %q: %v, want one", dir, dbs)
	}
	cmd := exec.Command(jitprof, "pathtime", "-i", data, dbs[0])
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("jitprof pathtime: %v\n%s", err, out)
	}
	// Rows: Time% Time On-CPU Samples Self Entries NAME [gen N] 0xADDR+SIZE
	shares := map[string]float64{}
	var sum float64
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 9 || strings.HasPrefix(line, "#") || !strings.HasPrefix(f[len(f)-1], "0x") {
			continue
		}
		n, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			continue
		}
		shares[strings.Join(f[6:len(f)-1], " ")] += n
		sum += n
	}
	if sum == 0 {
		t.Fatalf("jitprof pathtime charged no samples to generated code:\n%s", out)
	}
	for k := range shares {
		shares[k] *= 100 / sum
	}
	return shares
}

// runMinijit records minijit with extra flags and returns the perf.data
// path, the environment to report with, and minijit's truth.
func runMinijit(t *testing.T, jitprof, minijit string, flags ...string) (string, []string, map[string]float64) {
	t.Helper()
	dir := t.TempDir()
	env := append(os.Environ(), "JITPROF_JITLOG_DIR="+filepath.Join(dir, "jitlog"))
	data, truthPath := filepath.Join(dir, "perf.data"), filepath.Join(dir, "truth.json")
	args := append([]string{"record", "-q", "-o", data, "--", minijit, "-duration", "1500ms", "-truth", truthPath, "-quiet"}, flags...)
	rec := exec.Command(jitprof, args...)
	rec.Env = env
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("jitprof record: %v\n%s", err, out)
	}
	pid, m := readTruth(t, truthPath)
	t.Cleanup(func() { os.Remove(fmt.Sprintf("/tmp/perf-%d.map", pid)) })
	return data, env, m
}

// readTruth reads minijit's -truth file: its pid, and "name [gen SEQ]"
// -> per cent of its JIT CPU time.
func readTruth(t *testing.T, path string) (int, map[string]float64) {
	t.Helper()
	var truth struct {
		PID         int
		Generations []struct {
			Name    string
			Seq     uint64
			Percent float64
		}
	}
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &truth)
	}
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for _, g := range truth.Generations {
		m[fmt.Sprintf("%s [gen %d]", g.Name, g.Seq)] = g.Percent
	}
	return truth.PID, m
}

// TestMinijitJitdumpAndPerfMap runs the reuse scenario through the two
// formats JITs already write: the jitdump, which has times, attributes each
// generation; the perf map, which has none, must be reported as ambiguous
// where code was re-generated, not silently named.
func TestMinijitJitdumpAndPerfMap(t *testing.T) {
	perftest.Perf(t)
	jitprof, minijit := buildTools(t)
	data, env, truth := runMinijit(t, jitprof, minijit, "-jitdump", "-perfmap")

	checkGenerations(t, jitprof, data, env, "[JIT jitdump]", truth, sampledShares(t, jitprof, data, env), "--anon-handler=jitdump")

	rep := exec.Command(jitprof, "report", "-i", data, "--anon-handler=perfmap", "-l")
	rep.Env = env
	var stderr strings.Builder
	rep.Stderr = &stderr
	out, err := rep.Output()
	if err != nil {
		t.Fatalf("jitprof report --anon-handler=perfmap: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"perfmap data is ambiguous for", "fib, collatz", "sum_squares, xorshift"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the perf-map report does not say %q:\n%s", want, stderr.String())
		}
	}
	if !strings.Contains(string(out), "[ambiguous: fib | collatz]") {
		t.Errorf("the perf-map report names a generation instead of saying it cannot tell:\n%s", out)
	}
	for name := range truth {
		if strings.Contains(string(out), name) {
			t.Errorf("the perf-map report claims to know generation %q", name)
		}
	}
}

// csvRow is a row of report's CSV: its dso, symbol and share.
type csvRow struct {
	dso, sym string
	pc       float64
}

// csvRows reads report's CSV as CSV: the report quotes a name with a
// comma in it, as Go's generic shapes have.
func csvRows(t *testing.T, text string) []csvRow {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("report CSV has no rows (%v):\n%s", err, text)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, need := range []string{"dso", "sym", "self_percent"} {
		if _, ok := col[need]; !ok {
			t.Fatalf("report CSV has no %s column: %s", need, strings.Join(rows[0], ","))
		}
	}
	var out []csvRow
	for _, f := range rows[1:] {
		r := csvRow{dso: f[col["dso"]], sym: f[col["sym"]]}
		fmt.Sscan(f[col["self_percent"]], &r.pc)
		out = append(out, r)
	}
	return out
}

// csvShares sums the self percentages of the rows whose dso starts with
// prefix, by symbol, from report --format csv.
func csvShares(t *testing.T, text, prefix string) (map[string]float64, float64) {
	t.Helper()
	got := map[string]float64{}
	var sum float64
	for _, r := range csvRows(t, text) {
		if strings.HasPrefix(r.dso, prefix) {
			got[r.sym] += r.pc
			sum += r.pc
		}
	}
	return got, sum
}

// TestSelfContainedRecording: jitprof record copies the JIT data of the
// processes it recorded into perf.data, so the report names JIT code after
// the files are gone, says it used the embedded copy, and perf still reads
// the file.
func TestSelfContainedRecording(t *testing.T) {
	perftest.Perf(t)
	jitprof, minijit := buildTools(t)
	data, env, truth := runMinijit(t, jitprof, minijit, "-jitdump", "-perfmap")
	for _, e := range env {
		if dir, ok := strings.CutPrefix(e, "JITPROF_JITLOG_DIR="); ok {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, pid := range pidsOf(t, data, "minijit") {
		os.Remove(fmt.Sprintf("/tmp/perf-%d.map", pid))
	}
	for _, h := range []string{"jitlog", "jitdump", "perfmap"} {
		rep := exec.Command(jitprof, "report", "-i", data, "--anon-handler", h, "-l")
		rep.Env = env
		var stderr strings.Builder
		rep.Stderr = &stderr
		out, err := rep.Output()
		if err != nil {
			t.Fatalf("report --anon-handler %s: %v\n%s", h, err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "named by "+h) || !strings.Contains(stderr.String(), "(embedded in the recording)") {
			t.Errorf("report --anon-handler %s does not say it used the embedded copy:\n%s", h, stderr.String())
		}
		if h != "perfmap" {
			for name := range truth {
				if !strings.Contains(string(out), name) {
					t.Errorf("report --anon-handler %s lacks %s after the files were removed", h, name)
				}
			}
		}
	}
	if st := perftest.Stats(t, data); st["SAMPLE"] < 1000 {
		t.Errorf("perf report --stats on a recording with jitprof's section: %v", st)
	}
}

// TestAnnotateJIT annotates a JIT function from the code bytes minijit
// logged: the samples add up to 100% and lie in the function's loop,
// between its backward jump and that jump's target.
func TestAnnotateJIT(t *testing.T) {
	perftest.Perf(t)
	jitprof, minijit := buildTools(t)
	data, env, _ := runMinijit(t, jitprof, minijit)
	cmd := exec.Command(jitprof, "annotate", "-i", data, "--anon-samples", "fib [gen 1]")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("jitprof annotate: %v\n%s", err, out)
	}
	type line struct {
		pc   uint64
		pct  float64
		text string
	}
	var lines []line
	var loopStart, loopEnd uint64
	var sum float64
	for _, l := range strings.Split(string(out), "\n") {
		var ln line
		f := strings.SplitN(l, "\t", 3)
		if len(f) != 3 || !strings.HasSuffix(f[0], " :") {
			continue
		}
		if _, err := fmt.Sscanf(strings.TrimSuffix(f[0], " :"), "%f", &ln.pct); err != nil {
			continue
		}
		if _, err := fmt.Sscanf(strings.TrimSuffix(f[1], ":"), "%x", &ln.pc); err != nil {
			continue
		}
		ln.text = f[2]
		if strings.HasPrefix(ln.text, "jne ") {
			var target uint64
			fmt.Sscanf(strings.TrimPrefix(ln.text, "jne "), "%v", &target)
			loopStart, loopEnd = target, ln.pc
		}
		sum += ln.pct
		lines = append(lines, ln)
	}
	if len(lines) < 5 || !strings.Contains(lines[0].text, "push") {
		t.Fatalf("annotate printed no disassembly of fib's code:\n%s", out)
	}
	if math.Abs(sum-100) > 0.1 {
		t.Errorf("percentages sum to %.2f:\n%s", sum, out)
	}
	if loopStart == 0 {
		t.Fatalf("no backward jump found in:\n%s", out)
	}
	var inLoop float64
	for _, ln := range lines {
		if ln.pc >= loopStart && ln.pc <= loopEnd {
			inLoop += ln.pct
		}
	}
	if inLoop < 95 {
		t.Errorf("only %.1f%% of fib's samples in its loop [%#x, %#x]:\n%s", inLoop, loopStart, loopEnd, out)
	}
}
