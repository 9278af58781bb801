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
	dir := t.TempDir()
	env := append(os.Environ(), "JITPROF_JITLOG_DIR="+filepath.Join(dir, "jitlog"))
	data, truthPath := filepath.Join(dir, "perf.data"), filepath.Join(dir, "truth.json")
	rec := exec.Command(jitprof, "record", "-q", "-o", data, "--", minijit, "-duration", "1500ms", "-truth", truthPath, "-quiet")
	rec.Env = env
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("jitprof record: %v\n%s", err, out)
	}
	var truth struct {
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

	rep := exec.Command(jitprof, "report", "-i", data, "--anon-samples", "-l", "--format", "json")
	rep.Env = env
	out, err := rep.Output()
	if err != nil {
		t.Fatalf("jitprof report: %v", err)
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
	if len(r.Events) == 0 || r.Events[0].Samples < 2000 {
		t.Fatalf("too few samples to test a 2-point split: %+v", r.Events)
	}
	// minijit's truth is per cent of JIT time; the report's of all time.
	got := map[string]float64{}
	var jit float64
	for _, row := range r.Events[0].Rows {
		if strings.HasPrefix(row.Keys["dso"], "[JIT jitlog]") {
			got[strings.TrimPrefix(row.Keys["sym"], "[.] ")] += row.SelfPercent
			jit += row.SelfPercent
		}
	}
	if jit < 90 {
		t.Errorf("JIT code has %.1f%% of the samples, want most of them: %v", jit, got)
	}
	for _, g := range truth.Generations {
		name := fmt.Sprintf("%s [gen %d]", g.Name, g.Seq)
		share := 100 * got[name] / jit
		if math.Abs(share-g.Percent) > 2 {
			t.Errorf("%s: %.2f%% of JIT samples, minijit measured %.2f%%", name, share, g.Percent)
		}
		delete(got, name)
	}
	for name, pc := range got {
		t.Errorf("the report names %q (%.2f%%), which minijit never generated", name, pc)
	}
}
