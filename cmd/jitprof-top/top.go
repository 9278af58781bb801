package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/cli/sampling"
	"github.com/jitprof/jitprof/internal/record"
	"github.com/jitprof/jitprof/internal/report"
	"github.com/jitprof/jitprof/internal/top"
)

func runTop(args []string) error {
	fs := flag.NewFlagSet("top", flag.ContinueOnError)
	var sample sampling.Flags
	sample.Register(fs)
	delay := fs.Float64("d", 2, "refresh every `seconds`")
	fs.Float64Var(delay, "delay", 2, "same as -d")
	zero := fs.Bool("z", false, "show each interval's samples alone instead of decaying the earlier ones by an eighth per refresh")
	fs.BoolVar(zero, "zero", false, "same as -z")
	entries := fs.Int("E", 0, "--stdio: show at most `N` rows (0: all)")
	fs.IntVar(entries, "entries", 0, "same as -E")
	sortKeys := fs.String("s", "dso,sym", "sort `keys`, as report's --sort")
	fs.StringVar(sortKeys, "sort", "dso,sym", "same as -s")
	stdio := fs.Bool("stdio", false, "print a plain report each interval (the default when standard output is not a terminal)")
	var filterFlags cli.FilterFlags
	filterFlags.RegisterTop(fs)
	var graph cli.CallGraphFlags // frame-pointer callchains, shown as report -g shows them
	graph.RegisterTop(fs)
	var jit cli.AnonFlags // JIT code is named in any case: these choose how
	jit.Register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof top [-e EVENT] [-F HZ | -c PERIOD] [-a | -p PID[,PID] | -t TID | -- CMD ARGS] [-C CPUS] [-d SECONDS] [-z] [-s KEYS] [-g [caller|callee]] [--stdio [-E N]]\n\nEvery CPU by default (for a user other than root: their own processes, user space only).")
		cli.PrintFlags(fs)
	}
	cmdArgs, err := cli.ParseCommand(fs, cli.JoinCallGraphSpec(args))
	if err != nil {
		return err
	}
	usageErr := func(err error) error {
		fmt.Fprintf(fs.Output(), "jitprof top: %v\n", err)
		return cli.ErrUsage
	}
	cfg, targets, err := sample.Config(fs)
	if err != nil {
		return usageErr(err)
	}
	if targets > 1 {
		return usageErr(fmt.Errorf("give one of -a, -p and -t"))
	}
	if *delay <= 0 {
		return usageErr(fmt.Errorf("-d %v: a delay of more than 0 seconds", *delay))
	}
	o := top.Options{Delay: time.Duration(*delay * float64(time.Second)), Zero: *zero, Entries: *entries, Out: os.Stdout}
	o.Stdio = *stdio || !cli.IsTerminal(os.Stdout)
	keys, err := report.SortKeys(strings.Split(*sortKeys, ","))
	if err != nil {
		return usageErr(err)
	}
	o.View = top.View{Keys: keys, PID: -1}
	var graphOpts report.Options
	if err := graph.Apply(&graphOpts); err != nil {
		return usageErr(err)
	}
	o.View.Children, o.View.Chains = graphOpts.Children, graphOpts.Chains
	cfg.Callchain = o.View.Callchains()
	if o.View.Filter, err = filterFlags.Parse(); err != nil {
		return usageErr(err)
	}
	cfg.Command = cmdArgs
	if len(cmdArgs) > 0 {
		cfg.Env = os.Environ()
		// The UI owns the terminal: the command's output would tear it.
		cfg.Stdout, cfg.Stderr = io.Discard, io.Discard
		if o.Stdio {
			cfg.Stdout, cfg.Stderr = os.Stderr, os.Stderr
		}
	}
	notice, err := top.Target(&cfg)
	if err != nil {
		return err
	}
	o.Record, o.Title = cfg, top.Describe(&cfg, notice)
	jo := jit.Options()
	o.JIT = top.JIT{
		Handlers: func() ([]anon.Handler, error) { return anon.ExternalOptions{Budget: jo.Budget}.Select(jo.Handlers) },
		PyPyLog:  jo.PyPyLog, Force: jo.Force,
	}
	if _, err := o.JIT.Handlers(); err != nil {
		return usageErr(err)
	}
	if o.JIT.PyPyLog == "" && len(cmdArgs) > 0 {
		o.JIT.PyPyLog = record.PyPyLogFile(cfg.Env)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	return top.Run(ctx, o)
}
