package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

// TestCAgentGenerations is TestMinijitGenerations through the C agent: a C
// JIT linked with libjitlog.a re-generates different code at the same two
// addresses in three phases, and report --anon-samples must name every
// generation as the JIT's log of its calls does (see checkGenerations).
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

	checkGenerations(t, jitprof, data, env, "[JIT jitlog]", truth, sampledShares(t, jitprof, data, env), "--anon-samples")
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
