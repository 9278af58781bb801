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

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/perfevent"
	"github.com/jitprof/jitprof/internal/record"
)

func init() {
	register(&command{name: "record", summary: "sample a command, processes or the whole system into perf.data (like perf record)", run: runRecord})
}

func runRecord(args []string) error {
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	var cfg record.Config
	fs.StringVar(&cfg.Event, "e", perfevent.DefaultEvent, "`event` to sample: cpu-clock, task-clock, a hardware event, rNNNN or subsys:tracepoint, with :u :k :p modifiers")
	freq := func(s string) error {
		if s == "max" {
			// As perf: the most the kernel allows.
			max, err := linux.MaxSampleRate()
			if err != nil {
				return fmt.Errorf("-F max: %w", err)
			}
			s = strconv.Itoa(max)
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil || v == 0 {
			return fmt.Errorf("want a frequency in Hz or max, not %q", s)
		}
		cfg.Freq = v
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
	out := fs.String("o", "perf.data", "output `file`; an existing one is renamed FILE.old; - writes perf's pipe mode to standard output")
	fs.IntVar(&cfg.Pages, "m", 0, "ring buffer `pages` per CPU, a power of two (default 128)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "stop after this `duration` (e.g. 5s)")
	quiet := fs.Bool("q", false, "print nothing but errors")
	// perf record's long spellings.
	fs.StringVar(&cfg.Event, "event", perfevent.DefaultEvent, "same as -e")
	fs.Func("freq", "same as -F", freq)
	fs.Uint64Var(&cfg.Period, "count", 0, "same as -c")
	fs.BoolVar(&cfg.SystemWide, "all-cpus", false, "same as -a")
	fs.StringVar(pids, "pid", "", "same as -p")
	fs.StringVar(tids, "tid", "", "same as -t")
	fs.StringVar(cpus, "cpu", "", "same as -C")
	fs.StringVar(out, "output", "perf.data", "same as -o")
	fs.IntVar(&cfg.Pages, "mmap-pages", 0, "same as -m")
	fs.BoolVar(quiet, "quiet", false, "same as -q")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof record [-e EVENT] [-F HZ | -c PERIOD] [-g] [-a | -p PID[,PID] | -t TID] [-C CPUS] [-o FILE] [-m PAGES] [--duration D] [-q] [-- CMD ARGS]")
		printFlags(fs)
	}
	cmdArgs, err := parseCommand(fs, args)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if (set["c"] || set["count"]) && (set["F"] || set["freq"]) {
		fmt.Fprintln(fs.Output(), "jitprof record: -F and -c cannot both be given")
		return errUsage
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
		return errUsage
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
		return errUsage
	}
	cfg.Command = cmdArgs
	cfg.Env = os.Environ()
	cfg.Stdin, cfg.Stdout, cfg.Stderr = os.Stdin, os.Stdout, os.Stderr
	cfg.Cmdline = os.Args
	if exe, err := os.Executable(); err == nil {
		cfg.Cmdline = append([]string{exe}, os.Args[1:]...)
	}
	notice := func(msg string) {
		if !*quiet {
			fmt.Fprintf(os.Stderr, "jitprof record: %s\n", msg)
		}
	}
	cfg.Notice = notice
	var prog *progressLine
	if !*quiet && isTerminal(os.Stderr) {
		prog = &progressLine{w: os.Stderr}
		cfg.Progress = prog.update
	}

	// -o - writes perf's pipe mode to standard output, as perf record
	// does; the command's output then goes to standard error, so that
	// it does not mix with the data.
	f, name := os.Stdout, "to standard output"
	if *out == "-" {
		cfg.Pipe = true
		cfg.Stdout = os.Stderr
	} else {
		if f, err = createOutput(*out); err != nil {
			return err
		}
		name = *out
	}
	// A profiled command gets the terminal's SIGINT itself; the recorder
	// then ends cleanly, as on SIGTERM.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := record.Run(ctx, f, cfg)
	prog.clear()
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: %w", *out, cerr)
	}
	if err != nil {
		if res == nil && !cfg.Pipe {
			os.Remove(*out)
		}
		return err
	}
	if res.Lost > 0 {
		fmt.Fprintf(os.Stderr, "jitprof record: %d samples lost; try -F lower or -m more\n", res.Lost)
	}
	if !*quiet {
		jit := ""
		if res.JITFiles > 0 {
			jit = fmt.Sprintf(", %d JIT data files embedded", res.JITFiles)
		}
		fmt.Fprintf(os.Stderr, "[ jitprof record: wrote %.3f MB %s (%d samples, %d build-ids%s) ]\n",
			float64(res.Bytes)/1e6, name, res.Samples, res.BuildIDs, jit)
	}
	if res.ExitStatus > 0 {
		return exitStatus(res.ExitStatus)
	}
	return nil
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
