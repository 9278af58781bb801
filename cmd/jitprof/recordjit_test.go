package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

// recordJITData records the JIT pid for a second and returns jitprof
// record's standard error, the recording's size and the recorder's peak
// resident memory. The peak is GNU time's (%M), not this process's
// rusage of the child: Go starts a child sharing the test process's
// memory until it execs, and the kernel keeps that memory's high-water
// mark in the child's ru_maxrss, so a race-built test binary of a few
// GB made every recorder look that large.
func recordJITData(t *testing.T, jitprof string, pid int, data string) (stderr string, size, maxRSS int64) {
	t.Helper()
	timeCmd := perftest.Need(t, "/usr/bin/time")
	cmd := exec.Command(timeCmd, "-f", "jitprof-test-maxrss-kb %M", jitprof, "record", "-p", strconv.Itoa(pid), "--duration", "1s", "-o", data)
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("jitprof record: %v\n%s", err, e.String())
	}
	fi, err := os.Stat(data)
	if err != nil {
		t.Fatal(err)
	}
	out, peak, found := strings.Cut(e.String(), "jitprof-test-maxrss-kb ")
	kb, err := strconv.ParseInt(strings.TrimSpace(peak), 10, 64)
	if !found || err != nil {
		t.Fatalf("no peak memory from GNU time:\n%s", e.String())
	}
	return out, fi.Size(), kb << 10
}

// wroteMB is what jitprof record's last line says it wrote.
func wroteMB(t *testing.T, stderr string) float64 {
	t.Helper()
	m := regexp.MustCompile(`jitprof record: wrote ([0-9.]+) MB`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no summary line:\n%s", stderr)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// removeAfter removes path when the test ends. A helper, not a closure
// over the caller's variable: a test that reuses the variable for its next
// map would remove that one twice and leave this one (half a GB of sparse
// file a run) in /tmp, where a later process given the same pid cannot
// write its own.
func removeAfter(t *testing.T, path string) {
	t.Cleanup(func() { os.Remove(path) })
}

// TestRecordJITDataSize: jitprof record refuses a sparse perf map (500
// MiB of which the disk holds 4 KB were embedded whole, 1.78 GB of
// memory, while it said "wrote 0.447 MB"), streams a large dense one
// into the recording without holding it in memory, and says the size
// it wrote.
func TestRecordJITDataSize(t *testing.T) {
	perftest.Perf(t)
	jit := perftest.AnonJIT(t)
	jitprof := buildJitprof(t, t.TempDir())
	dir := t.TempDir()

	pid := startJIT(t, exec.Command(jit, "60", "map"))
	mp := fmt.Sprintf("/tmp/perf-%d.map", pid)
	removeAfter(t, mp)
	if err := os.Truncate(mp, 500<<20); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "sparse.data")
	stderr, size, rss := recordJITData(t, jitprof, pid, data)
	if !regexp.MustCompile(`refusing \S*` + regexp.QuoteMeta(mp) + `: sparse`).MatchString(stderr) {
		t.Errorf("jitprof record does not say it refused the sparse map:\n%q", stderr)
	}
	if size > 16<<20 || rss > 256<<20 {
		t.Errorf("a recording of %d MB, the recorder's peak memory %d MB: the sparse map was copied", size>>20, rss>>20)
	}
	if got, want := wroteMB(t, stderr), float64(size)/1e6; got < want-0.001 || got > want+0.001 {
		t.Errorf("jitprof record says it wrote %.3f MB, the file has %.3f", got, want)
	}

	// A dense map of 128 MiB: embedded, streamed.
	pid = startJIT(t, exec.Command(jit, "60", "map"))
	mp = fmt.Sprintf("/tmp/perf-%d.map", pid)
	removeAfter(t, mp)
	f, err := os.OpenFile(mp, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte("7f0000000000 10 filler_of_a_large_map\n")
	chunk := bytes.Repeat(line, (1<<20)/len(line))
	for range 128 {
		f.Write(chunk)
	}
	f.Close()
	fi, _ := os.Stat(mp)
	data = filepath.Join(dir, "dense.data")
	stderr, size, rss = recordJITData(t, jitprof, pid, data)
	t.Logf("a map of %d MB: a recording of %d MB, the recorder's peak memory %d MB", fi.Size()>>20, size>>20, rss>>20)
	if size < fi.Size() {
		t.Errorf("a recording of %d bytes for a map of %d: not embedded\n%s", size, fi.Size(), stderr)
	}
	if rss > 200<<20 {
		t.Errorf("the recorder's peak memory was %d MB embedding a map of %d MB: read whole", rss>>20, fi.Size()>>20)
	}
	if got, want := wroteMB(t, stderr), float64(size)/1e6; got < want-0.001 || got > want+0.001 {
		t.Errorf("jitprof record says it wrote %.3f MB, the file has %.3f", got, want)
	}
	if !strings.Contains(stderr, fmt.Sprintf("JIT data files embedded, %.3f MB", float64(fi.Size())/1e6)) {
		t.Errorf("jitprof record does not say how much JIT data it embedded (%d bytes):\n%s", fi.Size(), stderr)
	}
}
