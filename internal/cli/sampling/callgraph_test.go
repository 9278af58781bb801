package sampling

import (
	"flag"
	"io"
	"slices"
	"testing"

	"github.com/jitprof/jitprof/internal/record"
)

// TestCallGraph parses the call-graph flags as the daemon does (JoinMode
// first) and as record does: the mode given to -g or --call-graph, the
// last one winning, and a next argument that is no mode left alone.
func TestCallGraph(t *testing.T) {
	for _, c := range []struct {
		args      []string
		join      bool
		callchain bool
		stack     uint32
		pos       []string
		ok        bool
	}{
		{[]string{"-g"}, false, true, 0, nil, true},
		{[]string{"-g=dwarf"}, false, true, 8192, nil, true},
		{[]string{"--call-graph", "dwarf,4096"}, false, true, 4096, nil, true},
		{[]string{"--call-graph", "fp", "x"}, false, true, 0, []string{"x"}, true},
		{[]string{"-g", "dwarf", "start"}, true, true, 8192, []string{"start"}, true},
		{[]string{"-g", "dwarf", "start"}, false, true, 0, []string{"dwarf", "start"}, true},
		{[]string{"-g", "start"}, true, true, 0, []string{"start"}, true},
		{[]string{"--call-graph", "dwarf", "-g"}, true, true, 0, nil, true},
		{[]string{"-g", "--", "dwarf"}, true, true, 0, []string{"dwarf"}, true},
		{[]string{"--call-graph", "lbr"}, true, false, 0, nil, false},
		{[]string{"--call-graph", "dwarf,0"}, false, false, 0, nil, false},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var g CallGraph
		g.Register(fs, "")
		args := c.args
		if c.join {
			args = JoinMode(args)
		}
		err := fs.Parse(args)
		var cfg record.Config
		g.Apply(&cfg)
		if (err == nil) != c.ok || err == nil && (cfg.Callchain != c.callchain || cfg.UserStack != c.stack || !slices.Equal(fs.Args(), c.pos) && len(fs.Args())+len(c.pos) > 0) {
			t.Errorf("%q (join %v): %v, callchain %v, stack %d, args %q; want ok %v, %v, %d, %q", c.args, c.join, err, cfg.Callchain, cfg.UserStack, fs.Args(), c.ok, c.callchain, c.stack, c.pos)
		}
	}
}
