package main

import (
	"io"
	"path/filepath"
	"testing"
)

// TestReportCallGraphUsage checks that call-graph options report cannot
// honour are refused, not ignored.
func TestReportCallGraphUsage(t *testing.T) {
	data, err := filepath.Abs("../../perfdata/testdata/callgraph.data")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-g", "fractal"},
		{"-g", "graph,0.5,5,caller"}, // a print limit
		{"--call-graph=address"},
		{"-g=bogus"},
		{"--max-stack", "0"},
	} {
		if code := run(append([]string{"report", "-i", data, "-o", filepath.Join(t.TempDir(), "out")}, args...), io.Discard); code != 2 {
			t.Errorf("report %q: exit %d, want 2 (usage)", args, code)
		}
	}
}
