package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/driver"
	"github.com/jitprof/jitprof/internal/dump"
	"github.com/jitprof/jitprof/internal/termtext"
)

func init() {
	register(&command{name: "dump", summary: "print a perf.data file: header, attrs, features and records (like perf report -D)", run: runDump})
}

func runDump(args []string) error {
	fs := flag.NewFlagSet("dump", flag.ContinueOnError)
	var opts dump.Options
	input := fs.String("i", "", "input `file` (default perf.data; - for a pipe-mode stream on stdin)")
	fs.BoolVar(&opts.Stats, "stats", false, "print record counts per type and lost samples, like perf report --stats")
	fs.BoolVar(&opts.HeaderOnly, "header-only", false, "print the header, attrs and features only")
	force := fs.Bool("force", false, "read a recording owned by neither you nor root, as perf -f does")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof dump [-i] [FILE] [--stats | --header-only]")
		cli.PrintFlags(fs)
	}
	pos, err := cli.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	path := *input
	switch {
	case len(pos) == 1 && path == "":
		path = pos[0]
	case len(pos) > 1 || len(pos) == 1:
		fs.Usage()
		return cli.ErrUsage
	case path == "":
		path = "perf.data"
	}
	r, err := driver.OpenRecording(path, *force)
	if err != nil {
		return err
	}
	defer r.Close()
	out := termtext.NewWriter(os.Stdout)
	defer out.Flush()
	if err := dump.Write(out, r.File(), opts); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, w := range r.Warnings() {
		fmt.Fprintf(stderrText, "jitprof dump: %s: warning: %s\n", path, w)
	}
	return nil
}
