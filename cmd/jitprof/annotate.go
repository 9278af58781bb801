package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/jitprof/jitprof/internal/annotate"
	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/driver"
)

func init() {
	register(&command{name: "annotate", summary: "show a function's instructions with their share of its samples (like perf annotate)", run: runAnnotate})
}

func runAnnotate(args []string) error {
	fs := flag.NewFlagSet("annotate", flag.ContinueOnError)
	opts := annotate.Options{Source: true}
	input := fs.String("i", "perf.data", "input `file`")
	symbol := fs.String("s", "", "`symbol` to annotate (or give it as the argument; without one, every function with samples)")
	fs.StringVar(&opts.DSO, "dso", "", "only annotate the symbol in this `image` (path or base name)")
	// --stdio is perf's only text mode and ours only mode; accepted for
	// the command lines people already type.
	fs.Bool("stdio", true, "text output (the only output)")
	fs.BoolVar(&opts.Source, "source", true, "interleave source lines")
	fs.BoolFunc("no-source", "do not interleave source lines", func(string) error { opts.Source = false; return nil })
	syntax := fs.String("asm-syntax", "att", "assembly `syntax`: att or intel")
	output := fs.String("o", "", "write to `file` instead of standard output (-: standard output)")
	var jit cli.AnonFlags
	jit.Register(fs)
	var arch cli.ArchiveFlags
	arch.Register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof annotate [-i FILE | --archive FILE] [--dso IMAGE] [--no-source] [--asm-syntax att|intel] [--anon-samples] [SYMBOL]  (no SYMBOL: every function with samples)")
		cli.PrintFlags(fs)
	}
	pos, err := cli.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	// Without a symbol, every function with samples, as perf annotate.
	opts.Symbol = *symbol
	if len(pos) == 1 && opts.Symbol == "" {
		opts.Symbol = pos[0]
	} else if len(pos) > 0 {
		fs.Usage()
		return cli.ErrUsage
	}
	switch *syntax {
	case "att":
		opts.Syntax = annotate.ATT
	case "intel":
		opts.Syntax = annotate.Intel
	default:
		fmt.Fprintf(fs.Output(), "jitprof annotate: unknown assembly syntax %q\n", *syntax)
		return cli.ErrUsage
	}
	var src driver.Source
	if arch.Enabled() {
		src, err = arch.Source(&jit)
	} else {
		src, err = driver.OpenRecording(*input, jit.Force)
	}
	if err != nil {
		return err
	}
	o := driver.Options{
		LoadOptions: driver.LoadOptions{Progress: cli.ProgressBar(os.Stderr)},
		JIT:         jit.Options(), Command: "annotate", Log: stderrText,
	}
	return driver.Annotate(context.Background(), src, o, opts, outputTo(*output))
}
