package sampling

import (
	"flag"

	"github.com/jitprof/jitprof/internal/perfevent"
	"github.com/jitprof/jitprof/internal/record"
)

// CallGraph is what callchains to record, as perf record spells it: -g
// (frame pointers) or --call-graph fp|dwarf[,SIZE] (dwarf: the user
// registers and SIZE bytes of the user stack with each sample, 8192 by
// default, for the report, or the daemon, to unwind). -g also takes a
// mode as -g=dwarf; JoinMode lets a command without a command line of
// its own (the daemon) take it as -g dwarf too.
type CallGraph struct {
	callchain bool
	userStack uint32
}

// Register defines -g and --call-graph on fs; usage is -g's help.
func (g *CallGraph) Register(fs *flag.FlagSet, usage string) {
	fs.Var(graphFlag{graphMode{g}}, "g", usage)
	fs.Var(graphMode{g}, "call-graph", "callchains: `fp` (frame pointers, as -g) or dwarf[,SIZE] (SIZE bytes of user stack per sample, 8192 by default, unwound by the report or the daemon)")
}

// Apply sets cfg's callchains from the flags.
func (g *CallGraph) Apply(cfg *record.Config) {
	cfg.Callchain, cfg.UserStack = g.callchain, g.userStack
}

// graphMode is --call-graph's value: a mode.
type graphMode struct{ g *CallGraph }

func (graphMode) String() string { return "" }

func (m graphMode) Set(v string) error {
	switch v {
	case "true":
		m.g.callchain, m.g.userStack = true, 0
		return nil
	case "false":
		m.g.callchain, m.g.userStack = false, 0
		return nil
	}
	n, err := perfevent.ParseCallGraph(v)
	if err != nil {
		return err
	}
	m.g.callchain, m.g.userStack = true, n
	return nil
}

// graphFlag is -g: a bool flag (-g alone: frame pointers) that takes a
// mode too (-g=dwarf).
type graphFlag struct{ graphMode }

func (graphFlag) IsBoolFlag() bool { return true }

// JoinMode joins -g or --call-graph and a mode given as the next
// argument (-g dwarf, --call-graph dwarf,16384) into one (-g=dwarf), as
// perf takes --call-graph: the flag package would take a bool flag's
// value for a positional argument. Only for commands that run no
// command line: jitprof record -g dwarf-demo runs dwarf-demo.
func JoinMode(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		switch a {
		case "-g", "--g", "-call-graph", "--call-graph":
			if i+1 < len(args) {
				if _, err := perfevent.ParseCallGraph(args[i+1]); err == nil {
					out = append(out, a+"="+args[i+1])
					i++
					continue
				}
			}
		}
		out = append(out, a)
	}
	return out
}
