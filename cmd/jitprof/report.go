package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/jitprof/jitprof/internal/driver"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/report"
)

func init() {
	register(&command{name: "report", summary: "report samples per image, symbol and callchain (like opreport and perf report)", run: runReport})
}

func runReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	var opts report.Options
	input := fs.String("i", "perf.data", "input `file`")
	fs.StringVar(input, "input", "perf.data", "same as -i")
	symbols := fs.Bool("l", false, "list symbols (adds sym to the sort keys)")
	sortKeys := fs.String("sort", "", "sort `keys`, comma-separated: comm, pid (the process; perf's pid is the thread: tid), tid, dso, symbol (sym), srcline, cpu, app, userapp, or prefixes as perf takes them (default dso, or dso,sym with -l)")
	fs.StringVar(sortKeys, "s", "", "same as --sort")
	separate := fs.String("separate", "", "separate samples by `what`, as opreport: thread, cpu, kernel, lib (comma-separated)")
	merge := fs.String("merge", "", "merge samples the sort keys would separate: `what` of tid, tgid, cpu, lib, all")
	var graph callGraphFlags
	graph.register(fs)
	// perf report options whose behaviour is this report's anyway, taken
	// so that a perf command line works as it is.
	fs.Bool("stdio", false, "accepted for perf report's sake: the report is text on standard output unless --format or -o")
	fs.Bool("n", false, "accepted for perf report's sake (--show-nr-samples): the Samples column is always there")
	fs.Bool("show-nr-samples", false, "same as -n")
	fs.Float64Var(&opts.PercentLimit, "percent-limit", 0, "hide rows below this `percent`")
	// Filters, spelled as perf report's.
	var comms, pids, tids, dsos, cpus string
	for _, name := range []string{"comms", "comm", "c"} {
		fs.StringVar(&comms, name, "", "only the samples of these `commands` (comma-separated); --comms, --comm and -c are one")
	}
	fs.StringVar(&pids, "pid", "", "only the samples of these `pids` (comma-separated)")
	fs.StringVar(&tids, "tid", "", "only the samples of these `tids` (comma-separated)")
	for _, name := range []string{"dsos", "dso", "d"} {
		fs.StringVar(&dsos, name, "", "only the samples whose leaf is in these `images` (paths or base names, comma-separated); --dsos, --dso and -d are one")
	}
	for _, name := range []string{"cpu", "C"} {
		fs.StringVar(&cpus, name, "", "only the samples of these `cpus` (e.g. 0-3,5), percentages of theirs as perf's; --cpu and -C are one")
	}
	format := fs.String("format", "text", "output `format`: text, json, csv, pprof (.pb.gz), folded (flame-graph stacks) or html (a self-contained flame graph)")
	output := fs.String("o", "", "write to `file` instead of standard output")
	foldedPeriods := fs.Bool("folded-periods", false, "folded: write each stack's period (event count) instead of its samples")
	var jit anonFlags
	jit.register(fs)
	var sess sessionFlags // the daemon's sessions: session.go
	sess.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof report [-i FILE] [-l] [-g [caller|callee]] [-s|--sort KEYS] [--format text|json|csv|pprof|folded|html] [-o FILE]")
		printFlags(fs)
	}
	pos, err := parseArgs(fs, joinCallGraphSpec(args))
	if err != nil {
		return err
	}
	if len(pos) > 0 && !sess.enabled() {
		fs.Usage()
		return errUsage
	}
	if err := graph.apply(&opts); err != nil {
		fmt.Fprintf(fs.Output(), "jitprof report: %v\n", err)
		return errUsage
	}
	filter, err := reportFilter(comms, pids, tids, dsos, cpus)
	if err != nil {
		fmt.Fprintf(fs.Output(), "jitprof report: %v\n", err)
		return errUsage
	}
	f, err := driver.ParseFormat(*format)
	if err != nil {
		fmt.Fprintf(fs.Output(), "jitprof report: %v\n", err)
		return errUsage
	}
	view := driver.View{Symbols: *symbols, Separate: *separate, Merge: *merge}
	if *sortKeys != "" {
		if view.SortKeys, err = report.SortKeys(strings.Split(*sortKeys, ",")); err != nil {
			fmt.Fprintf(fs.Output(), "jitprof report: %v\n", err)
			return errUsage
		}
	}
	if sess.enabled() && opts.Chains.Graph && graph.set {
		if err := sessionGraph(f, view, filter); err != nil {
			fmt.Fprintf(fs.Output(), "jitprof report: %v\n", err)
			return errUsage
		}
	}
	if f == driver.Pprof && *output == "" && isTerminal(os.Stdout) {
		return driver.ErrTerminal // as go tool pprof, which will not either
	}
	var src driver.Source
	if sess.enabled() {
		src, err = sess.source(&jit, pos)
	} else {
		src, err = driver.OpenRecording(*input, jit.force)
	}
	if err != nil {
		return err
	}
	o := driver.ReportOptions{
		Options: driver.Options{
			LoadOptions: driver.LoadOptions{Progress: progressBar(os.Stderr)},
			JIT:         jit.options(), Filter: filter, Command: "report", Log: os.Stderr,
		},
		Report: opts, Format: f, FoldedPeriods: *foldedPeriods, GraphAsked: graph.set, View: view,
	}
	return driver.Report(context.Background(), src, o, outputTo(*output))
}

// progressBar returns a progress callback that draws on w when w is a
// terminal, and nil otherwise, so pipes and files stay clean.
func progressBar(w *os.File) func(done, total int64) {
	st, err := w.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	last := -1
	return func(done, total int64) {
		if total <= 0 {
			return
		}
		pc := int(done * 100 / total)
		if pc == last {
			return
		}
		last = pc
		n := pc / 4
		fmt.Fprintf(w, "\r[%s%s] %3d%%", strings.Repeat("#", n), strings.Repeat(".", 25-n), pc)
		if done >= total {
			fmt.Fprint(w, "\r\033[K")
		}
	}
}

// reportFilter parses report's filter flags.
func reportFilter(comms, pids, tids, dsos, cpus string) (report.Filter, error) {
	var f report.Filter
	list := func(s string) []string {
		var l []string
		for _, x := range strings.Split(s, ",") {
			if x = strings.TrimSpace(x); x != "" {
				l = append(l, x)
			}
		}
		return l
	}
	f.Comms, f.DSOs = list(comms), list(dsos)
	for _, x := range []struct {
		s   string
		dst *[]uint32
	}{{pids, &f.PIDs}, {tids, &f.TIDs}} {
		for _, id := range list(x.s) {
			n, err := strconv.ParseUint(id, 10, 32) // 0 too: the idle task
			if err != nil {
				return f, fmt.Errorf("bad id %q in %q", id, x.s)
			}
			*x.dst = append(*x.dst, uint32(n))
		}
	}
	if cpus != "" {
		var err error
		if f.CPUs, err = linux.ParseCPUList(cpus); err != nil {
			return f, err
		}
	}
	return f, nil
}

// outputTo opens the file of -o once there is something to write to
// it, or standard output when path is "".
func outputTo(path string) func() (io.WriteCloser, error) {
	return func() (io.WriteCloser, error) {
		if path == "" {
			return os.Stdout, nil
		}
		return os.Create(path)
	}
}
