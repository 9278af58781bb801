package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/driver"
	"github.com/jitprof/jitprof/internal/pypyview"
)

func init() {
	register(&command{name: "pypy", summary: "PyPy's hot loops and bridges with their traces and samples (jitprof pypy loops)", run: runPyPy})
}

func runPyPy(args []string) error { return pypyMain(os.Stdout, stderrText, args) }

// pypyMain runs "jitprof pypy SUBCOMMAND".
func pypyMain(stdout, stderr io.Writer, args []string) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		args = []string{"loops", "-h"} // loops is the one subcommand
	}
	if len(args) == 0 || args[0] != "loops" {
		fmt.Fprintln(stderr, "usage: jitprof pypy loops [-i perf.data] [--pypylog FILE] [-p PID] [--traces] [--format text|json] [--percent-limit P]")
		return cli.ErrUsage
	}
	fs := flag.NewFlagSet("pypy loops", flag.ContinueOnError)
	fs.SetOutput(stderr)
	input := fs.String("i", "perf.data", "the recording of the PyPy process (`perf.data`)")
	logPath := fs.String("pypylog", "", "PyPy's log `FILE` (%d is the pid); by default the log jitprof record embedded")
	pid := fs.Int("p", 0, "the PyPy process (`pid`), when the recording has several")
	traces := fs.Bool("traces", false, "show each loop's and bridge's optimised trace, its operations with their share of the samples")
	format := fs.String("format", "text", "output `format`: text or json (json always has the traces)")
	force := fs.Bool("force", false, "read a recording owned by neither you nor root, as perf -f does")
	limit := fs.Float64("percent-limit", 0.5, "hide loops and bridges under this `percent` of the process's samples")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof pypy loops [-i perf.data] [--pypylog FILE] [-p PID] [--traces] [--format text|json] [--percent-limit P]")
		cli.PrintFlags(fs)
	}
	pos, err := cli.ParseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fs.Usage()
		return cli.ErrUsage
	}
	if *format != "text" && *format != "json" {
		return fmt.Errorf("--format %s: want text or json", *format)
	}
	r, err := driver.OpenRecording(*input, *force)
	if err != nil {
		return err
	}
	defer r.Close()
	rec, err := pypyview.ReadRecording(r.File(), uint32(*pid))
	if err != nil {
		return fmt.Errorf("%s: %w", *input, err)
	}
	o := pypyview.Loops{Input: *input, Rec: rec, Traces: *traces, JSON: *format == "json", MinPercent: *limit}
	if *logPath != "" {
		o.Source = rec.LogName(*logPath)
		f, err := openLog(o.Source, *force)
		if err != nil {
			return err
		}
		defer f.Close()
		o.Log = f
	}
	return pypyview.WriteLoops(stdout, o)
}
