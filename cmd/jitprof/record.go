package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/cli/sampling"
	"github.com/jitprof/jitprof/internal/outfile"
	"github.com/jitprof/jitprof/internal/record"
)

func init() {
	register(&command{name: "record", summary: "sample a command, processes or the whole system into perf.data (like perf record)", run: runRecord})
}

func runRecord(args []string) error {
	cfg, out, quiet, err := recordFlags(args)
	if err != nil {
		return err
	}
	cfg.Env = os.Environ()
	cfg.Stdin, cfg.Stdout, cfg.Stderr = os.Stdin, os.Stdout, os.Stderr
	cfg.Cmdline = os.Args
	if exe, err := os.Executable(); err == nil {
		cfg.Cmdline = append([]string{exe}, os.Args[1:]...)
	}
	cfg.Notice = func(msg string) {
		if !quiet {
			fmt.Fprintf(stderrText, "jitprof record: %s\n", msg)
		}
	}
	var prog *progressLine
	if !quiet && cli.IsTerminal(os.Stderr) {
		prog = &progressLine{w: os.Stderr}
		cfg.Progress = prog.update
	}
	f, name, err := recordOutput(out, &cfg)
	if err != nil {
		return err
	}
	// A profiled command gets the terminal's SIGINT itself; the recorder
	// then ends cleanly, as on SIGTERM.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := record.Run(ctx, f.File, cfg)
	prog.clear()
	if err != nil && res == nil {
		f.abort()
		return err
	}
	if cerr := f.close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: %w", out, cerr)
	}
	if err != nil {
		return err
	}
	tellRecorded(res, name, quiet)
	if res.ExitStatus > 0 {
		return exitStatus(res.ExitStatus)
	}
	return nil
}

// recordFlags parses record's command line into what to record, the
// output's path and -q.
func recordFlags(args []string) (cfg record.Config, out string, quiet bool, err error) {
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	var sample sampling.Flags
	sample.Register(fs)
	var graph sampling.CallGraph
	graph.Register(fs, "record frame-pointer callchains (kernel and user); -g=dwarf as --call-graph dwarf")
	var duration time.Duration
	fs.StringVar(&out, "o", "perf.data", "output `file`; an existing one is renamed FILE.old; - writes perf's pipe mode to standard output")
	fs.DurationVar(&duration, "duration", 0, "sample for this `duration` (e.g. 5s): from the command's exec, or with -a, -p or -t from when the processes running were read")
	fs.BoolVar(&quiet, "q", false, "print nothing but errors")
	// perf record's long spellings.
	fs.StringVar(&out, "output", "perf.data", "same as -o")
	fs.BoolVar(&quiet, "quiet", false, "same as -q")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof record [-e EVENT] [-F HZ | -c PERIOD] [-g | --call-graph fp|dwarf[,SIZE]] [-a | -p PID[,PID] | -t TID] [-C CPUS] [-o FILE] [-m PAGES] [--duration D] [-q] [-- CMD ARGS]")
		cli.PrintFlags(fs)
	}
	cmdArgs, err := cli.ParseCommand(fs, args)
	if err != nil {
		return cfg, "", false, err
	}
	cfg, targets, err := sample.Config(fs)
	if err != nil {
		fmt.Fprintf(fs.Output(), "jitprof record: %v\n", err)
		return cfg, "", false, cli.ErrUsage
	}
	graph.Apply(&cfg)
	cfg.Duration = duration
	// A command with -a, -p or -t runs while they are recorded, and
	// its end ends the recording, as in perf record -a -- sleep 5.
	if targets > 1 || targets == 0 && len(cmdArgs) == 0 {
		fmt.Fprintln(fs.Output(), "jitprof record: give a command, or one of -a, -p and -t (with a command, it runs while they are recorded)")
		fs.Usage()
		return cfg, "", false, cli.ErrUsage
	}
	cfg.Command = cmdArgs
	return cfg, out, quiet, nil
}

// recordOutput opens the output: -o - writes perf's pipe mode to
// standard output, as perf record does, and the command's output then
// goes to standard error, so that it does not mix with the data. name
// is the output as the summary names it.
func recordOutput(out string, cfg *record.Config) (f *output, name string, err error) {
	if out == "-" {
		cfg.Pipe = true
		cfg.Stdout = os.Stderr
		return &output{File: os.Stdout}, "to standard output", nil
	}
	if f, err = createOutput(out); err != nil {
		return nil, "", err
	}
	return f, out, nil
}

// output is the recording's file: standard output, or a file of its own
// at -o's path.
type output struct {
	*os.File
	file *outfile.File // nil for standard output
}

func (o *output) close() error {
	if o.file == nil {
		return o.File.Close()
	}
	return o.file.Close()
}

// abort removes an output that received no recording.
func (o *output) abort() {
	if o.file == nil {
		o.File.Close()
		return
	}
	o.file.Abort()
}

// tellRecorded sums the recording up on standard error, as perf
// record does; lost samples are told even with -q.
func tellRecorded(res *record.Result, name string, quiet bool) {
	if res.Lost > 0 {
		fmt.Fprintf(stderrText, "jitprof record: %d samples lost; try -F lower or -m more\n", res.Lost)
	}
	if quiet {
		return
	}
	jit := ""
	if res.JITFiles > 0 {
		jit = fmt.Sprintf(", %d JIT data files embedded, %.3f MB", res.JITFiles, float64(res.JITBytes)/1e6)
	}
	fmt.Fprintf(stderrText, "[ jitprof record: wrote %.3f MB %s (%d samples, %d build-ids%s) ]\n",
		float64(res.FileBytes)/1e6, name, res.Samples, res.BuildIDs, jit)
}

// createOutput creates the output file at path at once, as perf record
// does, keeping a previous one as FILE.old: a recording killed midway is
// at its path, readable up to its last whole record. A new file is
// renamed over the path (internal/outfile), so that a link another user
// planted there is never followed, even while the previous output moves.
func createOutput(path string) (*output, error) {
	f, err := outfile.Create(path, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Replace(true); err != nil {
		f.Abort()
		return nil, err
	}
	return &output{File: f.File, file: f}, nil
}

// progressLine rewrites one status line on a terminal, a few times a
// second at most.
type progressLine struct {
	w     io.Writer
	last  time.Time
	shown bool
}

func (p *progressLine) update(pr record.Progress) {
	if now := time.Now(); now.Sub(p.last) >= 250*time.Millisecond {
		p.last = now
		p.shown = true
		fmt.Fprintf(p.w, "\r\033[K%d samples, %d lost, %.1f MB", pr.Samples, pr.Lost, float64(pr.Bytes)/1e6)
	}
}

func (p *progressLine) clear() {
	if p != nil && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
