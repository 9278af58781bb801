package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/pathtime"
	"github.com/jitprof/jitprof/internal/pypylog"
	"github.com/jitprof/jitprof/internal/termtext"
	"github.com/jitprof/jitprof/jitlog"
	"github.com/jitprof/jitprof/perfdata"
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
	pypyLog := fs.String("pypylog", "", "account the jit-profile-enter/exit events of PyPy's log `FILE` (seed 002) instead of a jitlog database")
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
		return pathtimePyPy(stdout, *pypyLog, inner, *input, *pid, *force)
	}
	path, owner, err := database(fs, *pid, pos)
	if err != nil {
		return err
	}
	// The database is read as a stream: it may be bigger than memory.
	var (
		acc      *pathtime.Accountant
		regions  = map[uint64]pathtime.Region{}
		events   int
		sampled  *samplesOf
		opts     = pathtime.Options{Nested: *nested}
		eventErr error
	)
	err = scanDatabase(fs, path, owner, *force, stderr, func(rec jitlog.Record) error {
		if h, ok := rec.(*jitlog.Header); ok {
			if *input != "" {
				who := uint32(*pid)
				if who == 0 {
					who = h.PID
				}
				if sampled, err = readSamples(*input, who, *force); err != nil {
					return err
				}
				opts.Samples = sampled.samples
				opts.InRegion = func(region, ip uint64) bool {
					r, ok := regions[region]
					return ok && ip >= r.Addr && ip-r.Addr < r.Size
				}
			}
			acc = pathtime.NewAccountant(opts)
			return nil
		}
		e, ok := pathtime.FromJitlog(rec, regions)
		if !ok {
			return nil
		}
		events++
		if eventErr = acc.Add(e); eventErr != nil {
			return eventErr
		}
		return nil
	})
	if err != nil {
		if err == eventErr {
			return fmt.Errorf("%s: %w", path, err)
		}
		return err
	}
	res, err := acc.Result()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fmt.Fprintf(stdout, "# %s: %d events, %d regions entered, %v in compiled regions\n", path, events, len(res.Totals), time.Duration(res.Total))
	fmt.Fprintf(stdout, "# Time is wall time from enter to exit: it includes time the thread was preempted or blocked.")
	if sampled == nil {
		fmt.Fprintf(stdout, " -i perf.data adds on-CPU time from a recording's samples.\n")
	} else {
		fmt.Fprintf(stdout, "\n# On-CPU is from %d %s samples of pid %d in %s, %d of them in compiled regions: %v.\n",
			len(sampled.samples), sampled.event, sampled.pid, *input, res.Samples, time.Duration(res.OnCPU))
		fmt.Fprintf(stdout, "# Self are the samples in the region's own code; the others were in what it called (the kernel included).\n")
	}
	if res.Unmatched > 0 {
		fmt.Fprintf(stdout, "# %d exits outside any region (logging started inside one)\n", res.Unmatched)
	}
	return pathtime.WriteTable(stdout, res, pathtime.Table{Sampled: sampled != nil, Name: func(region uint64) string {
		// Generations as report names them: "name [gen N]".
		if r, ok := regions[region]; ok {
			return fmt.Sprintf("%s [gen %d] %#x+%d", r.Name, r.Seq, r.Addr, r.Size)
		}
		return "[gen " + strconv.FormatUint(region, 10) + "]"
	}})
}

// samplesOf are one process's samples of a recording.
type samplesOf struct {
	pid     uint32
	event   string
	samples []pathtime.Sample
}

// clockMonotonic is Linux's CLOCK_MONOTONIC, the clock of jitlog's times.
const clockMonotonic = 1

// readSamples reads pid's cpu-clock or task-clock samples from the
// recording at path: their periods are nanoseconds on a CPU. Their times
// must be CLOCK_MONOTONIC, as the jitlog's are.
func readSamples(path string, pid uint32, force bool) (*samplesOf, error) {
	f, err := openRecording(path, force)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := &samplesOf{pid: pid}
	ok := map[*perfdata.Attr]bool{}
	for _, a := range f.Attrs {
		if a.Type != perfdata.TypeSoftware || a.Config > 1 { // cpu-clock, task-clock
			continue
		}
		if a.Flags&perfdata.FlagUseClockID == 0 || a.ClockID != clockMonotonic || a.SampleType&perfdata.SampleTime == 0 {
			return nil, fmt.Errorf("%s: its samples are not stamped with CLOCK_MONOTONIC, the clock of the JIT's log: record with jitprof record, or perf record -k mono", path)
		}
		ok[a] = true
		out.event = map[uint64]string{0: "cpu-clock", 1: "task-clock"}[a.Config]
	}
	if len(ok) == 0 {
		return nil, fmt.Errorf("%s: no cpu-clock or task-clock samples, whose periods are CPU time: record with -e cpu-clock", path)
	}
	r := f.Records()
	r.SkipCallchains = true
	for r.Next() {
		if s, is := r.Record().(*perfdata.Sample); is && s.PID == pid && ok[s.Attr] {
			out.samples = append(out.samples, pathtime.Sample{Time: s.Time, Thread: uint64(s.TID), Period: s.Period, IP: s.IP})
		}
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out.samples) == 0 {
		return nil, fmt.Errorf("%s: no %s samples of pid %d, the JIT's: was it recorded while the JIT ran?", path, out.event, pid)
	}
	return out, nil
}

// pathtimePyPy accounts the jit-profile-enter/exit events of a PyPy log
// (seed 002), in the log's TSC ticks; with a recording, in nanoseconds by
// its TSC calibration, and with the samples of PyPy's threads.
func pathtimePyPy(stdout io.Writer, path string, inner pathtime.InnerBridges, input string, pid int, force bool) error {
	f, err := openLog(path, force)
	if err != nil {
		return err
	}
	defer f.Close()
	l, err := pypylog.Read(f, pypylog.Options{})
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(l.Profile) == 0 {
		return fmt.Errorf("%s: no jit-profile-enter or jit-profile-exit events: released PyPys do not write them (seed 002); jitprof report --anon-samples --pypylog %s names loops and bridges by samples", path, path)
	}
	p := pathtime.NewPyPy(l, inner)
	opts := p.Options
	unit := "ticks"
	toTime := func(t uint64) uint64 { return t }
	var sampled *samplesOf
	if input != "" {
		clock, who, err := pypyRecording(input, pid, force)
		if err != nil {
			return err
		}
		if sampled, err = readSamples(input, who, force); err != nil {
			return err
		}
		unit, toTime = "ns", clock.Nanos
		opts.Samples = sampled.samples
		opts.InRegion = func(r, ip uint64) bool {
			c, ok := p.Code(r)
			return ok && ip >= c.Start && ip < c.End
		}
	}
	acc := pathtime.NewAccountant(opts)
	for _, e := range l.Profile {
		ev := p.Event(e)
		ev.Time = toTime(ev.Time)
		if err := acc.Add(ev); err != nil {
			return fmt.Errorf("%s: line %d: %w", path, e.Line, err)
		}
	}
	res, err := acc.Result()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	policy := map[pathtime.InnerBridges]string{pathtime.IgnoreInner: "charged to their loops", pathtime.RecordInner: "regions of their own"}[inner]
	total := strconv.FormatUint(res.Total, 10) + " ticks"
	if unit == "ns" {
		total = time.Duration(res.Total).String()
	}
	fmt.Fprintf(stdout, "# %s: %d events, %d regions entered, %s in loops and bridges; inner bridges %s\n", path, len(l.Profile), len(res.Totals), total, policy)
	for _, w := range l.Warnings {
		fmt.Fprintf(stdout, "# warning: %s\n", w)
	}
	fmt.Fprintf(stdout, "# Time is wall time from enter to exit, call_assembler's included in the caller's: it includes time the thread was preempted or blocked.")
	if sampled == nil {
		fmt.Fprintf(stdout, " In TSC ticks; -i perf.data (recorded by jitprof record) gives nanoseconds and on-CPU time.\n")
	} else {
		fmt.Fprintf(stdout, "\n# On-CPU is from %d %s samples of pid %d in %s, %d of them in loops and bridges: %v.\n",
			len(sampled.samples), sampled.event, sampled.pid, input, res.Samples, time.Duration(res.OnCPU))
	}
	return pathtime.WriteTable(stdout, res, pathtime.Table{Sampled: sampled != nil, Ticks: unit == "ticks", Name: func(region uint64) string {
		name := p.Name(region)
		if c, ok := p.Code(region); ok {
			name = fmt.Sprintf("%s %#x+%d", name, c.Start, c.End-c.Start)
		}
		return name
	}})
}

// pypyRecording returns the TSC calibration a jitprof recording carries
// for pid (0: the one process that has one), which puts PyPy's ticks on
// the samples' clock.
func pypyRecording(path string, pid int, force bool) (*pypylog.Clock, uint32, error) {
	f, err := openRecording(path, force)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	b, err := jitbundle.Load(f)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	var found []jitbundle.Entry
	if b != nil {
		for _, e := range b.Files {
			if e.Kind == jitbundle.KindTSC && (pid == 0 || e.PID == pid) {
				found = append(found, e)
			}
		}
	}
	switch {
	case len(found) == 0 && pid != 0:
		return nil, 0, fmt.Errorf("%s: no TSC calibration for pid %d, whose PyPy log is stamped with the TSC: record it with jitprof record", path, pid)
	case len(found) == 0:
		return nil, 0, fmt.Errorf("%s: no TSC calibration, which puts PyPy's TSC stamps on the samples' clock: record with jitprof record", path)
	case len(found) > 1:
		return nil, 0, fmt.Errorf("%s: %d processes have a TSC calibration: say which PyPy with -p PID", path, len(found))
	}
	clock, err := anon.TSCClock(found[0].Data)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: pid %d: the TSC calibration: %w", path, found[0].PID, err)
	}
	return clock, uint32(found[0].PID), nil
}
