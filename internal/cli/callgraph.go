package cli

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/jitprof/jitprof/internal/report"
)

// CallGraphFlags are the call-graph options of report and top, spelled
// as perf report's and perf top's: -g/--call-graph [SPEC],
// -G/--inverted, --children, --no-children and --max-stack.
type CallGraphFlags struct {
	set       bool   // -g, --call-graph or -G given
	none      bool   // print type none: no trees
	order     string // caller, callee, or "" for perf's default
	threshold float64
	children  *bool // --children or --no-children, the last given; nil: neither
	maxStack  int
}

// perf's --max-stack default: the kernel's perf_event_max_stack.
const defaultMaxStack = 127

// Register defines the flags on fs for a report.
func (g *CallGraphFlags) Register(fs *flag.FlagSet) {
	g.register(fs, "print the callchains of each row as trees, and the children column (perf's -g, --call-graph); an optional `spec` as perf's: graph or none, a threshold per cent (0.5), caller or callee (the order: caller with children); with --session, each function's callers and callees from the session's call-graph arcs, as opreport -c")
}

// RegisterTop defines the flags on fs for a live view, which samples
// frame-pointer callchains when they are asked for.
func (g *CallGraphFlags) RegisterTop(fs *flag.FlagSet) {
	g.register(fs, "sample frame-pointer callchains: the children column, and with --stdio their trees under each row, as report -g prints them (perf top's -g, --call-graph); an optional `spec` as perf's: graph or none, a threshold per cent (0.5), caller or callee (the order: caller with children)")
}

func (g *CallGraphFlags) register(fs *flag.FlagSet, usage string) {
	g.threshold = 0.5
	spec := callGraphSpec{g}
	for _, name := range []string{"g", "call-graph", "callgraph"} {
		fs.Var(spec, name, usage)
	}
	for _, name := range []string{"G", "inverted"} {
		fs.BoolFunc(name, "trees in caller order, from the outermost caller to the sampled function (perf's -G); same as -g caller", func(string) error {
			g.set, g.order = true, "caller"
			return nil
		})
	}
	fs.BoolFunc("children", "the children (inclusive) column from the callchains, and their trees (perf's --children)", func(string) error {
		t := true
		g.children = &t
		return nil
	})
	fs.BoolFunc("no-children", "self percentages only (the default without -g); with -g, trees of the samples each row is the leaf of", func(string) error {
		f := false
		g.children = &f
		return nil
	})
	fs.IntVar(&g.maxStack, "max-stack", defaultMaxStack, "read at most `n` functions of each callchain: the nearest the sample in callee order, the outermost in caller order (perf's --max-stack)")
}

// Asked reports whether -g, --call-graph or -G was given.
func (g *CallGraphFlags) Asked() bool { return g.set }

// Apply sets opts from the flags, as perf report would read them.
func (g *CallGraphFlags) Apply(opts *report.Options) error {
	if g.maxStack < 1 {
		return fmt.Errorf("--max-stack %d: want at least 1", g.maxStack)
	}
	opts.Children = g.set
	if g.children != nil {
		opts.Children = *g.children
	}
	opts.Chains = report.Chains{
		Graph:     (g.set || opts.Children) && !g.none,
		Caller:    g.order == "caller" || g.order == "" && opts.Children,
		Threshold: g.threshold,
		MaxStack:  g.maxStack,
	}
	return nil
}

// callGraphSpec is the flag.Value of -g: a bool flag (-g alone) that
// also takes perf's spec (-g caller, -g=graph,0.5,callee).
type callGraphSpec struct{ g *CallGraphFlags }

func (callGraphSpec) IsBoolFlag() bool { return true }
func (callGraphSpec) String() string   { return "" }

func (s callGraphSpec) Set(v string) error {
	g := s.g
	g.set = true
	if v == "true" {
		return nil
	}
	if v == "false" {
		g.set = false
		return nil
	}
	numbers := 0
	for _, tok := range strings.Split(v, ",") {
		switch tok {
		case "graph", "function", "percent":
		case "none":
			g.none = true
		case "caller", "callee":
			g.order = tok
		case "fractal", "flat", "folded":
			return fmt.Errorf("print type %q is not supported: graph or none (for folded stacks, --format folded)", tok)
		case "address", "srcline", "branch", "period", "count":
			return fmt.Errorf("%q is not supported: trees are of functions, in per cent", tok)
		case "fp", "dwarf", "lbr":
			// perf top --call-graph dwarf records DWARF call graphs;
			// here -g says how to show them, and top follows frame
			// pointers only.
			return fmt.Errorf("%q is how a recording takes call graphs (jitprof record --call-graph %s); here -g shows them: graph or none, a threshold per cent, caller or callee, and top follows frame pointers", tok, tok)
		default:
			f, err := strconv.ParseFloat(tok, 64)
			if err != nil || f < 0 || f > 100 {
				return fmt.Errorf("%q is not a call-graph spec: graph or none, a threshold per cent, caller or callee", tok)
			}
			if numbers++; numbers > 1 {
				return fmt.Errorf("a print limit (%s) is not supported", tok)
			}
			g.threshold = f
		}
	}
	return nil
}

// JoinCallGraphSpec joins -g and a spec given as the next argument
// (-g caller), as perf takes it, into one (-g=caller): the flag package
// would take the spec for a positional argument.
func JoinCallGraphSpec(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if (a == "-g" || a == "--call-graph" || a == "-call-graph") && i+1 < len(args) && isCallGraphSpec(args[i+1]) {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

// isCallGraphSpec reports whether s reads as a -g spec rather than as
// another argument: a comma list of perf's spec words and numbers.
func isCallGraphSpec(s string) bool {
	for _, tok := range strings.Split(s, ",") {
		switch tok {
		case "graph", "none", "caller", "callee", "function", "percent", "fractal", "flat", "folded", "address", "srcline", "branch", "period", "count",
			"fp", "dwarf", "lbr": // perf top's recording modes, refused by Set with a word on why
			continue
		}
		if _, err := strconv.ParseFloat(tok, 64); err != nil {
			return false
		}
	}
	return s != ""
}
