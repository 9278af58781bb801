package main

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

// TestReportPipeMode reads perf's pipe mode as perf users make it: a
// stream on standard input (perf record -o - | jitprof report -i -),
// read in one pass, and the same stream saved to a file, read as a
// file. report and annotate must say the same of both, and report what
// perf report says of the file.
func TestReportPipeMode(t *testing.T) {
	perf := perftest.Perf(t)
	busy := perftest.Busy(t)
	dir := t.TempDir()
	bin := buildJitprof(t, dir)
	data := filepath.Join(dir, "pipe.data")
	// jitprof runs as perf writes: a real stream.
	stream := perftest.Run(t, "sh", "-c", perf+" record -q -g -o - -- "+busy+" 100 1 | tee "+data+" | "+bin+" report -i - -g -s dso,sym")
	run := func(stdin []byte, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin) // a pipe, not a file
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("jitprof %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return string(out)
	}
	if file := run(nil, "report", "-i", data, "-g", "-s", "dso,sym"); stream != file {
		t.Errorf("report -g of the stream:\n%s\nof the file:\n%s", stream, file)
	}
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if s, f := run(b, "annotate", "-i", "-", "work_a"), run(nil, "annotate", "-i", data, "work_a"); s != f || !strings.Contains(f, "work_a") {
		t.Errorf("annotate of the stream:\n%.1500s\nof the file:\n%.1500s", s, f)
	}

	theirs := perfShares(t, data, "dso,sym")
	n := 0
	for _, r := range reportJSON(t, "-i", data, "-s", "dso,sym") {
		if filepath.Base(r.Keys["dso"]) != filepath.Base(busy) {
			continue
		}
		n++
		want := theirs[filepath.Base(busy)+"/"+r.Level+" "+r.Keys["sym"]]
		if math.Abs(r.SelfPercent-want) > 0.01 {
			t.Errorf("%s: %.2f%%, perf's %.2f%%", r.Keys["sym"], r.SelfPercent, want)
		}
	}
	if n < 2 {
		t.Errorf("%d rows of %s in the pipe-mode file's report; perf's: %v", n, busy, theirs)
	}
}
