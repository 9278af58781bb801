package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/perfevent"
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
			fmt.Fprintf(os.Stderr, "jitprof record: %s\n", msg)
		}
	}
	var prog *progressLine
	if !quiet && isTerminal(os.Stderr) {
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
	res, err := record.Run(ctx, f, cfg)
	prog.clear()
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: %w", out, cerr)
	}
	if err != nil {
		if res == nil && !cfg.Pipe {
			os.Remove(out)
		}
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
	fs.StringVar(&cfg.Event, "e", perfevent.DefaultEvent, "`event` to sample: cpu-clock, task-clock, a hardware event, rNNNN or subsys:tracepoint, with :u :k :p modifiers")
	freq := func(s string) error {
		if s == "max" {
			cfg.Freq, cfg.MaxFreq = 0, true
			return nil
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil || v == 0 {
			return fmt.Errorf("want a frequency in Hz or max, not %q", s)
		}
		cfg.Freq, cfg.MaxFreq = v, false
		return nil
	}
	fs.Func("F", "sample at this `frequency` in Hz, or max (default 4000; a tracepoint: every hit unless -F or -c)", freq)
	fs.Uint64Var(&cfg.Period, "c", 0, "sample every `period` events (instead of -F)")
	fs.BoolVar(&cfg.Callchain, "g", false, "record frame-pointer callchains (kernel and user)")
	fs.Func("call-graph", "callchains: `fp` (frame pointers, as -g)", func(s string) error {
		if mode, _, _ := strings.Cut(s, ","); mode != "fp" {
			return fmt.Errorf("%q: jitprof records frame-pointer callchains (fp), which need code built with frame pointers (-fno-omit-frame-pointer)", s)
		}
		cfg.Callchain = true
		return nil
	})
	fs.BoolVar(&cfg.SystemWide, "a", false, "profile every CPU")
	pids := fs.String("p", "", "profile existing `pids` (comma-separated) and their new threads and children")
	tids := fs.String("t", "", "profile existing `tids` (comma-separated)")
	cpus := fs.String("C", "", "profile only these `cpus` (e.g. 0-3,5)")
	fs.StringVar(&out, "o", "perf.data", "output `file`; an existing one is renamed FILE.old; - writes perf's pipe mode to standard output")
	fs.IntVar(&cfg.Pages, "m", 0, "ring buffer `pages` per CPU, a power of two (default 128)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "stop after this `duration` (e.g. 5s)")
	fs.BoolVar(&quiet, "q", false, "print nothing but errors")
	// perf record's long spellings.
	fs.StringVar(&cfg.Event, "event", perfevent.DefaultEvent, "same as -e")
	fs.Func("freq", "same as -F", freq)
	fs.Uint64Var(&cfg.Period, "count", 0, "same as -c")
	fs.BoolVar(&cfg.SystemWide, "all-cpus", false, "same as -a")
	fs.StringVar(pids, "pid", "", "same as -p")
	fs.StringVar(tids, "tid", "", "same as -t")
	fs.StringVar(cpus, "cpu", "", "same as -C")
	fs.StringVar(&out, "output", "perf.data", "same as -o")
	fs.IntVar(&cfg.Pages, "mmap-pages", 0, "same as -m")
	fs.BoolVar(&quiet, "quiet", false, "same as -q")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof record [-e EVENT] [-F HZ | -c PERIOD] [-g] [-a | -p PID[,PID] | -t TID] [-C CPUS] [-o FILE] [-m PAGES] [--duration D] [-q] [-- CMD ARGS]")
		cli.PrintFlags(fs)
	}
	cmdArgs, err := cli.ParseCommand(fs, args)
	if err != nil {
		return cfg, "", false, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if (set["c"] || set["count"]) && (set["F"] || set["freq"]) {
		fmt.Fprintln(fs.Output(), "jitprof record: -F and -c cannot both be given")
		return cfg, "", false, cli.ErrUsage
	}
	// Without -F, cfg.Freq is 0: perf's 4000 Hz, or every hit of a tracepoint.
	if cfg.PIDs, err = intList(*pids); err == nil {
		cfg.TIDs, err = intList(*tids)
	}
	if err == nil && *cpus != "" {
		cfg.CPUs, err = linux.ParseCPUList(*cpus)
	}
	if err != nil {
		fmt.Fprintf(fs.Output(), "jitprof record: %v\n", err)
		return cfg, "", false, cli.ErrUsage
	}
	targets := 0
	for _, on := range []bool{cfg.SystemWide, len(cfg.PIDs) > 0, len(cfg.TIDs) > 0} {
		if on {
			targets++
		}
	}
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
func recordOutput(out string, cfg *record.Config) (f *os.File, name string, err error) {
	if out == "-" {
		cfg.Pipe = true
		cfg.Stdout = os.Stderr
		return os.Stdout, "to standard output", nil
	}
	if f, err = createOutput(out); err != nil {
		return nil, "", err
	}
	return f, out, nil
}

// tellRecorded sums the recording up on standard error, as perf
// record does; lost samples are told even with -q.
func tellRecorded(res *record.Result, name string, quiet bool) {
	if res.Lost > 0 {
		fmt.Fprintf(os.Stderr, "jitprof record: %d samples lost; try -F lower or -m more\n", res.Lost)
	}
	if quiet {
		return
	}
	jit := ""
	if res.JITFiles > 0 {
		jit = fmt.Sprintf(", %d JIT data files embedded, %.3f MB", res.JITFiles, float64(res.JITBytes)/1e6)
	}
	fmt.Fprintf(os.Stderr, "[ jitprof record: wrote %.3f MB %s (%d samples, %d build-ids%s) ]\n",
		float64(res.FileBytes)/1e6, name, res.Samples, res.BuildIDs, jit)
}

func intList(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var l []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad id %q in %q", f, s)
		}
		l = append(l, n)
	}
	return l, nil
}

// createOutput creates the output file, keeping a previous one as
// FILE.old as perf record does.
func createOutput(path string) (*os.File, error) {
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
		if err := os.Rename(path, path+".old"); err != nil {
			return nil, fmt.Errorf("keeping the previous output: %w", err)
		}
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
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
