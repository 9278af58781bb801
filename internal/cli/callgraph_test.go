package cli

import (
	"flag"
	"io"
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
		{"--call-graph dwarf -a", "--call-graph=dwarf -a"}, // perf top's, refused with a word on why
	} {
		if got := JoinCallGraphSpec(strings.Fields(c.in)); !reflect.DeepEqual(got, strings.Fields(c.want)) {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}

// TestCallGraphRecordingMode: -g dwarf (perf top's recording mode) is
// refused saying where DWARF call graphs are taken, not run as a
// command named dwarf.
func TestCallGraphRecordingMode(t *testing.T) {
	var g CallGraphFlags
	fs := flag.NewFlagSet("top", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.Register(fs)
	err := fs.Parse(JoinCallGraphSpec([]string{"--call-graph", "dwarf", "-a"}))
	if err == nil || !strings.Contains(err.Error(), "jitprof record --call-graph dwarf") {
		t.Errorf("--call-graph dwarf: %v; want it refused, naming record --call-graph dwarf", err)
	}
}
