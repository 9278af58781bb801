package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/jitlog"
)

// TestPathtimeStreams: pathtime reads a database as a stream. One of 2.4
// million enters and exits (80 MB), which read whole took 150 MB of heap,
// must be accounted with a heap of a few MB.
func TestPathtimeStreams(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	l, err := jitlog.Open(jitlog.Options{Dir: dir, Name: "streams"})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := l.CodeLoad(0x10000, 64, "loop_a", nil)
	b, _ := l.CodeLoad(0x10040, 64, "loop_b", nil)
	const rounds = 800_000
	for i := 0; i < rounds; i++ {
		if l.Enter(1, a) != nil || l.Enter(1, b) != nil || l.Exit(1) != nil {
			t.Fatal("logging failed")
		}
	}
	path := l.Path()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			peak.Store(max(peak.Load(), m.HeapAlloc))
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	var stdout, stderr strings.Builder
	err = pathtimeMain(&stdout, &stderr, []string{path})
	close(stop)
	<-done
	if err != nil {
		t.Fatalf("pathtime: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{fmt.Sprintf("%d events, 2 regions entered", 3*rounds), "wall time from enter to exit: it includes time the thread was preempted", "loop_a [gen 1] 0x10000+64", "loop_b [gen 2] 0x10040+64"} {
		if !strings.Contains(out, want) {
			t.Errorf("pathtime does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "[seq") {
		t.Errorf("pathtime says [seq N] where report says [gen N]:\n%s", out)
	}
	fi, _ := os.Stat(path)
	t.Logf("heap grew by %d KB reading %d MB", (peak.Load()-min(peak.Load(), before.HeapAlloc))>>10, fi.Size()>>20)
	if grew := peak.Load() - min(peak.Load(), before.HeapAlloc); grew > 32<<20 {
		t.Errorf("the heap grew by %d MB reading a %d MB database: not a stream", grew>>20, fi.Size()>>20)
	}
}

// TestPathtimeOnCPU records minijit, which measures the thread CPU time of
// every generation it runs, and checks that pathtime -i perf.data, joining
// the logged enters and exits with the recording's samples, splits on-CPU
// time between the generations as minijit measured, within 2 points.
func TestPathtimeOnCPU(t *testing.T) {
	perftest.Perf(t)
	jitprof, minijit := buildTools(t)
	data, env, truth := runMinijit(t, jitprof, minijit)
	dbs, _ := filepath.Glob(filepath.Join(filepath.Dir(data), "jitlog", "anon.*"))
	if len(dbs) != 1 {
		t.Fatalf("jitlog databases %v, want minijit's", dbs)
	}
	cmd := exec.Command(jitprof, "pathtime", "-i", data, dbs[0])
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("jitprof pathtime -i: %v\n%s", err, out)
	}
	// "  12.34%        1.2s     1.1s      4400   4200     12  fib [gen 1] 0x7f...+96"
	row := regexp.MustCompile(`(?m)^\s*[\d.]+%\s+\S+\s+(\S+)\s+(\d+)\s+\d+\s+\d+\s+(.+ \[gen \d+\]) 0x[0-9a-f]+\+\d+$`)
	got := map[string]float64{}
	var sum float64
	for _, m := range row.FindAllStringSubmatch(string(out), -1) {
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatalf("on-CPU %q: %v", m[1], err)
		}
		got[m[3]] += float64(d)
		sum += float64(d)
	}
	if sum == 0 || !strings.Contains(string(out), "On-CPU is from") {
		t.Fatalf("no on-CPU time:\n%s", out)
	}
	for name, want := range truth {
		share := 100 * got[name] / sum
		if d := math.Abs(share - want); d > 2 {
			t.Errorf("%s: %.2f%% of on-CPU time, minijit measured %.2f%%", name, share, want)
		}
		delete(got, name)
	}
	for name, d := range got {
		if d > 0 {
			t.Errorf("on-CPU time for %q (%s), which minijit did not run", name, strconv.FormatFloat(100*d/sum, 'f', 2, 64))
		}
	}
	if t.Failed() {
		t.Logf("%s", out)
	}
}

// TestPathtimePyPy: pathtime --pypylog accounts seed 002's example (its
// stamps written in hex, as PyPy writes them), and a log without
// jit-profile events is an error that says where loops are named instead.
func TestPathtimePyPy(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.log")
	log := fmt.Sprintf("[%x] {jit-profile-enter\nloop1      # e.g. an entry bridge\n[%x] jit-profile-enter}\n"+
		"[%x] {jit-profile-enter\nloop0      # JUMP from loop1 to loop0\n[%x] jit-profile-enter}\n"+
		"[%x] {jit-profile-exit\nloop0      # e.g. because of a failing guard\n[%x] jit-profile-exit}\n", 100, 101, 200, 201, 500, 501)
	if err := os.WriteFile(seed, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, policy := range []string{"ignore", "record"} {
		var stdout, stderr strings.Builder
		if err := pathtimeMain(&stdout, &stderr, []string{"--pypylog", seed, "--inner-bridges", policy}); err != nil {
			t.Fatalf("%s: %v\n%s", policy, err, stderr.String())
		}
		out := stdout.String()
		for _, want := range []string{"3 events, 2 regions entered, 400 ticks", "75.00%              300         1  loop0", "25.00%              100         1  loop1"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: pathtime does not say %q:\n%s", policy, want, out)
			}
		}
	}
	plain := filepath.Join(dir, "plain.log")
	os.WriteFile(plain, []byte("[1] {jit-backend-addr\n[2] jit-backend-addr}\n"), 0o644)
	var stdout, stderr strings.Builder
	err := pathtimeMain(&stdout, &stderr, []string{"--pypylog", plain})
	if err == nil || !strings.Contains(err.Error(), "no jit-profile-enter or jit-profile-exit events") || !strings.Contains(err.Error(), "report --anon-samples --pypylog") {
		t.Errorf("a log without events: %v", err)
	}
	if err := pathtimeMain(&stdout, &stderr, []string{"--pypylog", seed, "--inner-bridges", "often"}); err == nil {
		t.Error("--inner-bridges often accepted")
	}
	// The log is the invoker's word, read as a recording (-i) is: a
	// device is refused, and so, unless --force, is a file owned by
	// another user than the invoker or root.
	if err := pathtimeMain(&stdout, &stderr, []string{"--pypylog", "/dev/zero"}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("--pypylog /dev/zero: %v, want a refusal", err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(seed, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		err := pathtimeMain(&stdout, &stderr, []string{"--pypylog", seed})
		if err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("a log owned by uid 65534: %v, want a refusal", err)
		}
		if err := pathtimeMain(&stdout, &stderr, []string{"--pypylog", seed, "--force"}); err != nil {
			t.Errorf("--force: %v", err)
		}
	}
}
