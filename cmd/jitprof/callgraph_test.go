package main

import (
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestJoinCallGraphSpec(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"-g caller -s sym", "-g=caller -s sym"},
		{"-g -s sym", "-g -s sym"},
		{"--call-graph graph,0.5,callee", "--call-graph=graph,0.5,callee"},
		{"-g 0.5", "-g=0.5"},
		{"-g -i data", "-g -i data"},
		{"-g perf.data", "-g perf.data"},
		{"-- -g caller", "-- -g caller"},
	} {
		if got := joinCallGraphSpec(strings.Fields(c.in)); !reflect.DeepEqual(got, strings.Fields(c.want)) {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}

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
