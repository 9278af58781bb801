package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/driver"
	"github.com/jitprof/jitprof/internal/pathtime"
	"github.com/jitprof/jitprof/internal/termtext"
)

func init() {
	register(&command{name: "pathtime", summary: "time per compiled region from a JIT's logged enter/exit events (exact, not sampled)", run: runPathtime})
}

func runPathtime(args []string) error { return pathtimeMain(os.Stdout, stderrText, args) }

// pathtimeMain runs "jitprof pathtime" writing to stdout and stderr.
func pathtimeMain(stdout, stderr io.Writer, args []string) error {
	// The regions' names are the JIT's: escaped for the terminal.
	out := termtext.NewWriter(stdout)
	defer out.Flush()
	stdout = out
	fs := flag.NewFlagSet("pathtime", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pid := fs.Int("p", 0, "read the jitlog database of process `pid` (in $JITPROF_JITLOG_DIR or /tmp/jitprof-UID)")
	input := fs.String("i", "", "add on-CPU time per region from the cpu-clock or task-clock samples of this `perf.data` (jitprof record, or perf record -k mono)")
	nested := fs.Bool("nested", false, "an enter inside a region is a call charged to the caller, not a jump")
	force := fs.Bool("force", false, "read a database owned by another user than the process's (or yours), with several links, or over the size limit, and a recording owned by neither you nor root")
	pypyLog := fs.String("pypylog", "", "account the jit-profile-enter/exit events of PyPy's log `FILE` instead of a jitlog database")
	innerFlag := fs.String("inner-bridges", "ignore", "with --pypylog, the `policy` for bridges that jump back to their own loop: ignore (charged to the loop) or record (regions of their own)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof pathtime [-p PID | DATABASE] [-i perf.data] [--nested]\n       jitprof pathtime --pypylog FILE [--inner-bridges ignore|record] [-i perf.data [-p PID]]")
		cli.PrintFlags(fs)
	}
	pos, err := cli.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	if *pypyLog != "" {
		if len(pos) > 0 || *nested {
			return errors.New("--pypylog takes no database and no --nested (with PyPy's events, call_assembler is a call and other enters are jumps)")
		}
		inner, err := pathtime.ParseInnerBridges(*innerFlag)
		if err != nil {
			return err
		}
		f, err := openLog(*pypyLog, *force)
		if err != nil {
			return err
		}
		defer f.Close()
		return pathtime.WritePyPy(stdout, pathtime.PyPyReport{Path: *pypyLog, Log: f, Inner: inner, Input: *input,
			Recording: func() (*pathtime.PyPyRecording, error) {
				r, err := driver.OpenRecording(*input, *force)
				if err != nil {
					return nil, err
				}
				defer r.Close()
				rec, err := pathtime.ReadPyPyRecording(r.File(), *pid)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", *input, err)
				}
				return rec, nil
			}})
	}
	db, err := database(fs, *pid, pos, *force)
	if err != nil {
		return err
	}
	return pathtime.WriteJitlog(stdout, pathtime.JitlogReport{Database: db, Nested: *nested, Input: *input, PID: *pid, Warn: stderr,
		Samples: func(pid uint32) (*pathtime.Sampled, error) {
			r, err := driver.OpenRecording(*input, *force)
			if err != nil {
				return nil, err
			}
			defer r.Close()
			s, err := pathtime.ReadSamples(r.File(), pid)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", *input, err)
			}
			return s, nil
		}})
}
