package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestReportPerfSpellings runs report with perf report's spellings of
// its options: each must give what jitprof's own spelling gives.
func TestReportPerfSpellings(t *testing.T) {
	data, err := filepath.Abs("../../perfdata/testdata/callgraph.data")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	report := func(args ...string) string {
		t.Helper()
		out := filepath.Join(dir, "out.txt")
		if code := run(append([]string{"report", "-o", out}, args...), io.Discard); code != 0 {
			t.Fatalf("jitprof report %v: exit %d", args, code)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// Each spelling must make a difference to be tested by the file.
	if report("-i", data, "-g") == report("-i", data) || report("-i", data, "-s", "comm,dso,sym") == report("-i", data) ||
		report("-i", data, "--comms", "nobody") == report("-i", data) ||
		report("-i", data, "-g", "caller") == report("-i", data, "-g", "callee") ||
		report("-i", data, "-g") == report("-i", data, "-g", "none") {
		t.Fatal("-g or --sort changes nothing on the test file: it cannot tell the spellings apart")
	}
	for _, c := range []struct{ perf, ours []string }{
		{[]string{"--input", data}, []string{"-i", data}},
		{[]string{"-i", data, "-s", "comm,dso,sym"}, []string{"-i", data, "--sort", "comm,dso,sym"}},
		{[]string{"-i", data, "--stdio", "-n", "--show-nr-samples"}, []string{"-i", data}},
		{[]string{"-i", data, "--children"}, []string{"-i", data, "-g"}},
		{[]string{"-i", data, "-g", "none", "--no-children"}, []string{"-i", data}},
		{[]string{"-i", data, "--call-graph=graph,0.5,caller"}, []string{"-i", data, "-g", "caller"}},
		{[]string{"-i", data, "-g", "caller"}, []string{"-i", data, "-g=caller"}},
		{[]string{"-i", data, "-G"}, []string{"-i", data, "--inverted"}},
		{[]string{"-i", data, "-G"}, []string{"-i", data, "-g"}}, // caller order with children
		{[]string{"-i", data, "--no-children", "-g"}, []string{"-i", data, "--no-children", "--call-graph", "callee,0.5"}},
		{[]string{"-i", data, "-g", "graph,0.5,caller", "--max-stack", "127"}, []string{"-i", data, "-g"}},
		{[]string{"-i", data, "-c", "nobody"}, []string{"-i", data, "--comms", "nobody"}},
		{[]string{"-i", data, "-d", "busy2"}, []string{"-i", data, "--dsos", "/tmp/scratch/busy2"}},
		{[]string{"-i", data, "--comm", "busy2", "--pid", "0,22352"}, []string{"-i", data}},
	} {
		if got, want := report(c.perf...), report(c.ours...); got != want {
			t.Errorf("report %v differs from report %v:\n%s\nwant\n%s", c.perf, c.ours, got, want)
		}
	}
}
