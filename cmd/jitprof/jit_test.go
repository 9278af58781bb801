package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

// buildTools builds jitprof and minijit into a temporary directory.
func buildTools(t *testing.T) (jitprof, minijit string) {
	t.Helper()
	dir := t.TempDir()
	jitprof, minijit = filepath.Join(dir, "jitprof"), filepath.Join(dir, "minijit")
	for bin, pkg := range map[string]string{jitprof: ".", minijit: "../../examples/minijit"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return jitprof, minijit
}

// TestMinijitGenerations is the demo as a test: jitprof records the
// bundled JIT, which re-generates different code at the same addresses,
// and report --anon-samples must name every generation of every function
// within 2 percentage points of the split minijit measured itself.
func TestMinijitGenerations(t *testing.T) {
	perftest.Perf(t) // the recorder needs perf_event_open, as perf does
	jitprof, minijit := buildTools(t)
	data, env, truth := runMinijit(t, jitprof, minijit)
	checkGenerations(t, jitprof, data, env, "[JIT jitlog]", truth, "--anon-samples")
}

// checkGenerations reports data with extra flags as CSV and checks that
// the rows of the JIT image whose name starts with prefix give every
// generation of truth ("name [gen SEQ]" -> per cent of JIT CPU time)
// within 2 points, and name nothing else.
func checkGenerations(t *testing.T, jitprof, data string, env []string, prefix string, truth map[string]float64, flags ...string) {
	t.Helper()
	rep := exec.Command(jitprof, append([]string{"report", "-i", data, "-l", "--format", "csv"}, flags...)...)
	rep.Env = env
	var stderr strings.Builder
	rep.Stderr = &stderr
	out, err := rep.Output()
	if err != nil {
		t.Fatalf("jitprof report %s: %v\n%s", strings.Join(flags, " "), err, stderr.String())
	}
	// The truth is per cent of JIT time; the report's of all time.
	got, jit := csvShares(t, string(out), prefix)
	if jit < 90 {
		t.Fatalf("JIT code has %.1f%% of the samples, want most of them: %v\n%s", jit, got, stderr.String())
	}
	var worst float64
	for name, want := range truth {
		share := 100 * got[name] / jit
		if d := math.Abs(share - want); d > 2 {
			t.Errorf("%s: %.2f%% of JIT samples, the JIT measured %.2f%%", name, share, want)
		} else {
			worst = max(worst, d)
		}
		delete(got, name)
	}
	t.Logf("generations within %.2f points of the truth", worst)
	for name, pc := range got {
		t.Errorf("the report names %q (%.2f%%), which the JIT never generated", name, pc)
	}
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
	var truth struct {
		PID         int
		Generations []struct {
			Name    string
			Seq     uint64
			Percent float64
		}
	}
	b, err := os.ReadFile(truthPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &truth); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(fmt.Sprintf("/tmp/perf-%d.map", truth.PID)) })
	m := map[string]float64{}
	for _, g := range truth.Generations {
		m[fmt.Sprintf("%s [gen %d]", g.Name, g.Seq)] = g.Percent
	}
	return data, env, m
}

// TestMinijitJitdumpAndPerfMap runs the reuse scenario through the two
// formats JITs already write: the jitdump, which has times, attributes each
// generation; the perf map, which has none, must be reported as ambiguous
// where code was re-generated, not silently named.
func TestMinijitJitdumpAndPerfMap(t *testing.T) {
	perftest.Perf(t)
	jitprof, minijit := buildTools(t)
	data, env, truth := runMinijit(t, jitprof, minijit, "-jitdump", "-perfmap")

	checkGenerations(t, jitprof, data, env, "[JIT jitdump]", truth, "--anon-handler=jitdump")

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

// csvShares sums the self percentages of the rows whose dso starts with
// prefix, by symbol, from report --format csv.
func csvShares(t *testing.T, csv, prefix string) (map[string]float64, float64) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	if len(lines) < 2 {
		t.Fatalf("report CSV has no rows:\n%s", csv)
	}
	head := strings.Split(lines[0], ",")
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, need := range []string{"dso", "sym", "self_percent"} {
		if _, ok := col[need]; !ok {
			t.Fatalf("report CSV has no %s column: %s", need, lines[0])
		}
	}
	got := map[string]float64{}
	var sum float64
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) != len(head) || !strings.HasPrefix(f[col["dso"]], prefix) {
			continue
		}
		var pc float64
		fmt.Sscan(f[col["self_percent"]], &pc)
		got[f[col["sym"]]] += pc
		sum += pc
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
