package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/diff"
	"github.com/jitprof/jitprof/internal/driver"
)

func init() {
	register(&command{name: "diff", summary: "compare profiles row by row, JIT code matched across runs (like perf diff)", run: runDiff})
}

func runDiff(args []string) error {
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	var o driver.DiffOptions
	compute := fs.String("c", "delta-abs", "how a profile is compared with the baseline: `delta`, delta-abs (delta, sorted by its size), ratio (of periods) or wdiff:W1,W2 (period times W2 minus the baseline's times W1)")
	fs.StringVar(compute, "compute", "delta-abs", "same as -c")
	fs.IntVar(&o.Diff.Order, "o", 1, "sort by column `N`: 0 the baseline's share, N the computation for the Nth profile after it")
	fs.IntVar(&o.Diff.Order, "order", 1, "same as -o")
	fs.BoolVar(&o.Period, "p", false, "show each profile's period (event count)")
	fs.BoolVar(&o.Period, "period", false, "same as -p")
	fs.BoolVar(&o.Diff.BaselineOnly, "b", false, "only the rows the baseline has")
	fs.BoolVar(&o.Diff.BaselineOnly, "baseline-only", false, "same as -b")
	sortKeys := fs.String("s", "", "match rows by these sort `keys`, comma-separated, as report's --sort (default dso,sym)")
	fs.StringVar(sortKeys, "sort", "", "same as -s")
	fs.BoolVar(&o.Diff.Exact, "exact-names", false, "match JIT code by its names as reported: with addresses, [gen N], tier marks and loop numbers, which differ from run to run")
	format := fs.String("format", "text", "output `format`: text, json, csv, pprof (.pb.gz: the baseline's values negated, as pprof -diff_base) or html (a differential flame graph)")
	output := fs.String("output", "", "write to `file` instead of standard output (-o is perf diff's --order)")
	var filterFlags cli.FilterFlags
	filterFlags.RegisterDiff(fs)
	var jit cli.AnonFlags
	jit.Register(fs)
	var sess cli.SessionFlags
	sess.Register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof diff [-c delta|delta-abs|ratio|wdiff:W1,W2] [-o N] [-p] [-s KEYS] [--format text|json|csv|pprof|html] [BASE] [NEW...]\n\nBASE and NEW are recordings or sessions of the daemon (session:NAME); none: perf.data.old and perf.data, one: perf.data.old and it.")
		cli.PrintFlags(fs)
	}
	pos, err := cli.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	usageErr := func(err error) error {
		fmt.Fprintf(fs.Output(), "jitprof diff: %v\n", err)
		return cli.ErrUsage
	}
	if sess.Enabled() {
		return usageErr(fmt.Errorf("name sessions as session:NAME among the inputs"))
	}
	switch len(pos) {
	case 0:
		pos = []string{"perf.data.old", "perf.data"}
	case 1:
		pos = []string{"perf.data.old", pos[0]}
	}
	if o.Diff.Compute, err = diff.ParseCompute(*compute); err != nil {
		return usageErr(err)
	}
	if o.Diff.Order < 0 || o.Diff.Order >= len(pos) {
		return usageErr(fmt.Errorf("-o %d: sort by 0 (the baseline) to %d", o.Diff.Order, len(pos)-1))
	}
	if *sortKeys != "" {
		o.Diff.Keys = strings.Split(*sortKeys, ",")
	}
	if o.Filter, err = filterFlags.Parse(); err != nil {
		return usageErr(err)
	}
	if o.Format, err = driver.ParseFormat(*format); err != nil {
		return usageErr(err)
	}
	if err := driver.DiffFormat(o.Format, len(pos)); err != nil {
		return usageErr(err)
	}
	if o.Format == driver.Pprof && *output == "" && cli.IsTerminal(os.Stdout) {
		return driver.ErrTerminal
	}
	var srcs []driver.Source
	for _, in := range pos {
		src, err := sess.Input(&jit, in)
		if err != nil {
			for _, s := range srcs {
				s.Close()
			}
			return err
		}
		srcs = append(srcs, src)
	}
	o.JIT, o.Command, o.Log = jit.Options(), "diff", os.Stderr
	return driver.Diff(context.Background(), srcs, o, outputTo(*output))
}
