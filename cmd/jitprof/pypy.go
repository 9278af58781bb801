package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/pypylog"
	"github.com/jitprof/jitprof/internal/pypyview"
	"github.com/jitprof/jitprof/internal/termtext"
	"github.com/jitprof/jitprof/perfdata"
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
	rec, err := readPyPyRecording(*input, uint32(*pid), *force)
	if err != nil {
		return err
	}
	var (
		raw    io.Reader
		source string
	)
	if *logPath != "" {
		path := strings.ReplaceAll(*logPath, "%d", strconv.Itoa(int(rec.pid)))
		f, err := openLog(path, *force)
		if err != nil {
			return err
		}
		defer f.Close()
		raw, source = f, path
	} else {
		if rec.log == nil {
			return fmt.Errorf("%s: pid %d has no PyPy log embedded (jitprof record embeds the log of PYPYLOG=jit-backend-addr,jit-log-opt:FILE): give it with --pypylog FILE", *input, rec.pid)
		}
		raw, source = bytes.NewReader(rec.log), rec.logPath+" (embedded in the recording)"
	}
	l, err := pypylog.Read(raw, pypylog.Options{Ops: true})
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	if len(l.Codes) == 0 {
		return fmt.Errorf("%s names no loops: PYPYLOG needs jit-backend-addr (and jit-log-opt for the traces)", source)
	}
	v, err := pypyview.Build(l, rec.samples, pypyview.Options{Clock: rec.clock, MinPercent: *limit})
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	if *format == "json" {
		return pypyview.WriteJSON(stdout, v)
	}
	// Loops are named by PyPy's log: escaped for the terminal.
	out := termtext.NewWriter(stdout)
	defer out.Flush()
	stdout = out
	clock := "times by the recording's TSC calibration"
	if rec.clock == nil {
		clock = "no TSC calibration in the recording (jitprof record writes one): code re-generated at an address is charged to the last there"
	}
	fmt.Fprintf(stdout, "# %d samples of pid %d (%s) in %s, %d (%.2f%%) in PyPy's loops and bridges; log %s, %s\n",
		v.Samples, rec.pid, rec.comm, *input, v.InCode, percentOf(v.InCode, v.Samples), source, clock)
	for _, w := range l.Warnings {
		fmt.Fprintf(stdout, "# warning: %s\n", w)
	}
	fmt.Fprintf(stdout, "# Percentages are of the process's samples")
	if v.Hidden > 0 {
		fmt.Fprintf(stdout, "; %d samples in loops and bridges under %.2g%% are not shown", v.Hidden, *limit)
	}
	if !*traces {
		fmt.Fprintf(stdout, ". --traces shows each trace with its hot operations")
	}
	fmt.Fprintln(stdout, ".")
	return pypyview.WriteText(stdout, v, *traces)
}

func percentOf(n, total uint64) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(n) / float64(total)
}

// pypyRec is what the loop view needs of a recording: one PyPy process's
// samples, and the log and TSC calibration jitprof record embedded for it.
type pypyRec struct {
	pid     uint32
	comm    string
	samples []pypyview.Sample
	log     []byte
	logPath string
	clock   *pypylog.Clock
}

// readPyPyRecording reads pid's samples from the recording at path; pid 0
// is the one PyPy process there: the one with an embedded log, or else
// the one whose command is pypy.
func readPyPyRecording(path string, pid uint32, force bool) (*pypyRec, error) {
	f, err := openRecording(path, force)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := jitbundle.Load(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	comms := map[uint32]string{}
	samples := map[uint32][]pypyview.Sample{}
	r := f.Records()
	r.SkipCallchains = true
	for r.Next() {
		switch v := r.Record().(type) {
		case *perfdata.Comm:
			if v.PID == v.TID || comms[v.PID] == "" {
				comms[v.PID] = v.Comm
			}
		case *perfdata.Sample:
			samples[v.PID] = append(samples[v.PID], pypyview.Sample{Time: v.Time, IP: v.IP})
		}
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if pid == 0 {
		var cands []uint32
		if b != nil {
			for _, e := range b.Files {
				if e.Kind == "pypy" && !slices.Contains(cands, uint32(e.PID)) {
					cands = append(cands, uint32(e.PID))
				}
			}
		}
		if len(cands) == 0 {
			for p, c := range comms {
				if strings.HasPrefix(c, "pypy") && len(samples[p]) > 0 {
					cands = append(cands, p)
				}
			}
		}
		slices.Sort(cands)
		switch len(cands) {
		case 0:
			return nil, fmt.Errorf("%s: no PyPy process with samples: record one with jitprof record, or name it with -p PID", path)
		case 1:
			pid = cands[0]
		default:
			return nil, fmt.Errorf("%s: PyPy processes %v: say which with -p PID", path, cands)
		}
	}
	rec := &pypyRec{pid: pid, comm: comms[pid], samples: samples[pid]}
	if len(rec.samples) == 0 {
		return nil, fmt.Errorf("%s: no samples of pid %d", path, pid)
	}
	if b != nil {
		for _, e := range b.Files {
			if uint32(e.PID) != pid {
				continue
			}
			switch e.Kind {
			case "pypy":
				// The file is mapped, and unmapped when it is closed.
				rec.log, rec.logPath = bytes.Clone(e.Data), e.Path
			case jitbundle.KindTSC:
				if rec.clock, err = anon.TSCClock(e.Data); err != nil {
					return nil, fmt.Errorf("%s: pid %d: the TSC calibration: %w", path, pid, err)
				}
			}
		}
	}
	return rec, nil
}
