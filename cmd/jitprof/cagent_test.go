package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

// TestCAgentGenerations is TestMinijitGenerations through the C agent: a C
// JIT linked with libjitlog.a re-generates different code at the same two
// addresses in three phases, and report --anon-samples must name every
// generation within 2 percentage points of the split it measured itself.
// 1.5 s of JIT CPU time is about 6000 samples at the default 4000 Hz.
func TestCAgentGenerations(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("splitjit generates x86-64 code; this is %s", runtime.GOARCH)
	}
	perftest.Perf(t)
	perftest.Need(t, "make")
	perftest.Need(t, "gcc")
	jitprof, _ := buildTools(t)
	bin := t.TempDir()
	splitjit := filepath.Join(bin, "splitjit")
	if out, err := exec.Command("make", "-s", "-C", "../../agent", "OUT="+bin, splitjit).CombinedOutput(); err != nil {
		t.Fatalf("make splitjit: %v\n%s", err, out)
	}

	dir := t.TempDir()
	env := append(os.Environ(), "JITPROF_JITLOG_DIR="+filepath.Join(dir, "jitlog"))
	data, truthPath := filepath.Join(dir, "perf.data"), filepath.Join(dir, "truth")
	rec := exec.Command(jitprof, "record", "-q", "-o", data, "--", splitjit, truthPath, "1500")
	rec.Env = env
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("jitprof record: %v\n%s", err, out)
	}
	truth := readSplitTruth(t, truthPath)

	rep := exec.Command(jitprof, "report", "-i", data, "--anon-samples", "-l", "--format", "json")
	rep.Env = env
	var stderr bytes.Buffer
	rep.Stderr = &stderr
	out, err := rep.Output()
	if err != nil {
		t.Fatalf("jitprof report: %v\n%s", err, stderr.Bytes())
	}
	var r struct {
		Events []struct {
			Samples uint64
			Rows    []struct {
				Keys        map[string]string
				SelfPercent float64 `json:"self_percent"`
			}
		}
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("report JSON: %v\n%.500s", err, out)
	}
	if len(r.Events) == 0 || r.Events[0].Samples < 4000 {
		t.Fatalf("too few samples to test a 2-point split: %+v", r.Events)
	}
	// The truth is per cent of JIT time; the report's of all time.
	got := map[string]float64{}
	var jit float64
	for _, row := range r.Events[0].Rows {
		if strings.HasPrefix(row.Keys["dso"], "[JIT jitlog]") {
			got[strings.TrimPrefix(row.Keys["sym"], "[.] ")] += row.SelfPercent
			jit += row.SelfPercent
		}
	}
	if jit < 90 {
		t.Fatalf("JIT code has %.1f%% of the samples, want most of them: %v", jit, got)
	}
	var worst float64
	for name, want := range truth {
		share := 100 * got[name] / jit
		if d := math.Abs(share - want); d > 2 {
			t.Errorf("%s: %.2f%% of JIT samples, splitjit measured %.2f%%", name, share, want)
		} else {
			worst = max(worst, d)
		}
		delete(got, name)
	}
	t.Logf("%d samples; the generations are within %.2f points of the truth", r.Events[0].Samples, worst)
	for name, pc := range got {
		t.Errorf("the report names %q (%.2f%%), which splitjit never generated", name, pc)
	}
}

// readSplitTruth reads splitjit's JSON lines into "name [gen SEQ]" -> per
// cent of JIT CPU time.
func readSplitTruth(t *testing.T, path string) map[string]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	truth := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var g struct {
			Name    string
			Seq     uint64
			Percent float64
		}
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Bytes())
		}
		truth[fmt.Sprintf("%s [gen %d]", g.Name, g.Seq)] = g.Percent
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(truth) != 6 {
		t.Fatalf("%s: %d generations, want 6", path, len(truth))
	}
	return truth
}
