package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/driver"
	"github.com/jitprof/jitprof/internal/outfile"
	"github.com/jitprof/jitprof/internal/report"
)

func init() {
	register(&command{name: "report", summary: "report samples per image, symbol and callchain (like opreport and perf report)", run: runReport})
}

func runReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	var opts report.Options
	symbols := fs.Bool("l", false, "list symbols (adds sym to the sort keys)")
	sortKeys := fs.String("sort", "", "sort `keys`, comma-separated: comm, pid (the process; perf's pid is the thread: tid), tid, dso, symbol (sym), srcline, cpu, app, userapp, or prefixes as perf takes them (default dso, or dso,sym with -l)")
	fs.StringVar(sortKeys, "s", "", "same as --sort")
	separate := fs.String("separate", "", "separate samples by `what`, as opreport: thread, cpu, kernel, lib (comma-separated)")
	merge := fs.String("merge", "", "merge samples the sort keys would separate: `what` of tid, tgid, cpu, lib, all")
	var graph cli.CallGraphFlags
	graph.Register(fs)
	// perf report options whose behaviour is this report's anyway, taken
	// so that a perf command line works as it is.
	fs.Bool("stdio", false, "accepted for perf report's sake: the report is text on standard output unless --format or -o")
	fs.Bool("n", false, "accepted for perf report's sake (--show-nr-samples): the Samples column is always there")
	fs.Bool("show-nr-samples", false, "same as -n")
	fs.Float64Var(&opts.PercentLimit, "percent-limit", 0, "hide rows below this `percent`")
	var filterFlags cli.FilterFlags // perf report's, spelled as perf's
	filterFlags.Register(fs)
	format := fs.String("format", "text", "output `format`: text, json, csv, pprof (.pb.gz), folded (flame-graph stacks), html (a self-contained flame graph) or otlp (an OpenTelemetry profiles request, protobuf: docs/fleet.md)")
	output := fs.String("o", "", "write to `file` instead of standard output (-: standard output)")
	foldedPeriods := fs.Bool("folded-periods", false, "folded: write each stack's period (event count) instead of its samples")
	var jit cli.AnonFlags
	jit.Register(fs)
	var in cli.InputFlags
	in.Register(fs)
	var ot cli.OTLPFlags
	ot.RegisterResource(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof report [-i FILE | --archive FILE] [-l] [-g [caller|callee]] [-s|--sort KEYS] [--format text|json|csv|pprof|folded|html|otlp] [-o FILE]")
		cli.PrintFlags(fs)
	}
	pos, err := cli.ParseArgs(fs, cli.JoinCallGraphSpec(args))
	if err != nil {
		return err
	}
	if err := in.Check(fs, "report", pos); err != nil {
		return err
	}
	if err := graph.Apply(&opts); err != nil {
		fmt.Fprintf(fs.Output(), "jitprof report: %v\n", err)
		return cli.ErrUsage
	}
	filter, err := filterFlags.Parse()
	if err != nil {
		fmt.Fprintf(fs.Output(), "jitprof report: %v\n", err)
		return cli.ErrUsage
	}
	f, err := driver.ParseFormat(*format)
	if err != nil {
		fmt.Fprintf(fs.Output(), "jitprof report: %v\n", err)
		return cli.ErrUsage
	}
	view := driver.View{Symbols: *symbols, Separate: *separate, Merge: *merge}
	if *sortKeys != "" {
		if view.SortKeys, err = report.SortKeys(strings.Split(*sortKeys, ",")); err != nil {
			fmt.Fprintf(fs.Output(), "jitprof report: %v\n", err)
			return cli.ErrUsage
		}
	}
	o := driver.ReportOptions{
		Options: driver.Options{
			LoadOptions: driver.LoadOptions{Progress: cli.ProgressBar(os.Stderr)},
			JIT:         jit.Options(), Filter: filter, Command: "report", Log: stderrText,
		},
		Report: opts, Format: f, FoldedPeriods: *foldedPeriods, GraphAsked: graph.Asked(), View: view,
	}
	if in.Session.Enabled() {
		if err := o.CheckSessionGraph(); err != nil {
			fmt.Fprintf(fs.Output(), "jitprof report: %v\n", err)
			return cli.ErrUsage
		}
	}
	if f == driver.Pprof && (*output == "" || *output == "-") && cli.IsTerminal(os.Stdout) {
		return driver.ErrTerminal // as go tool pprof, which will not either
	}
	if f == driver.OTLP && (*output == "" || *output == "-") && cli.IsTerminal(os.Stdout) {
		return driver.ErrTerminalOTLP
	}
	if f == driver.OTLP {
		if o.OTLP, err = ot.Resource(os.Getenv); err != nil {
			return err
		}
	}
	src, err := in.Source(&jit, pos)
	if err != nil {
		return err
	}
	return driver.Report(context.Background(), src, o, outputTo(*output))
}

// outputTo opens the file of -o once there is something to write to
// it, or standard output when path is "" or "-". The file is written
// beside its path and renamed over it when complete (internal/outfile):
// a report that fails leaves the path as it was, and a link another
// user planted there is never followed.
func outputTo(path string) func() (io.WriteCloser, error) {
	return func() (io.WriteCloser, error) {
		if path == "" || path == "-" {
			return os.Stdout, nil
		}
		return outfile.Create(path, 0o666)
	}
}
