package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/jitprof/jitprof/internal/pathtime"
	"github.com/jitprof/jitprof/jitlog"
	"github.com/jitprof/jitprof/perfdata"
)

func init() {
	register(&command{name: "pathtime", summary: "time per compiled region from a JIT's logged enter/exit events (exact, not sampled)", run: runPathtime})
}

func runPathtime(args []string) error { return pathtimeMain(os.Stdout, os.Stderr, args) }

// pathtimeMain runs "jitprof pathtime" writing to stdout and stderr.
func pathtimeMain(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("pathtime", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pid := fs.Int("p", 0, "read the jitlog database of process `pid` (in $JITPROF_JITLOG_DIR or /tmp/jitprof-UID)")
	input := fs.String("i", "", "add on-CPU time per region from the cpu-clock or task-clock samples of this `perf.data` (jitprof record, or perf record -k mono)")
	nested := fs.Bool("nested", false, "an enter inside a region is a call charged to the caller, not a jump")
	force := fs.Bool("force", false, "read a database owned by another user than the process's (or yours), with several links, or over the size limit")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof pathtime [-p PID | DATABASE] [-i perf.data] [--nested]")
		printFlags(fs)
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
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
				if sampled, err = readSamples(*input, who); err != nil {
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
	if sampled == nil {
		fmt.Fprintf(stdout, "%8s %14s %9s  %s\n", "Time%", "Time", "Entries", "Region")
	} else {
		fmt.Fprintf(stdout, "%8s %14s %14s %8s %8s %9s  %s\n", "Time%", "Time", "On-CPU", "Samples", "Self", "Entries", "Region")
	}
	for _, t := range res.Totals {
		// Generations as report names them: "name [gen N]".
		name := "[gen " + strconv.FormatUint(t.Region, 10) + "]"
		if r, ok := regions[t.Region]; ok {
			name = fmt.Sprintf("%s [gen %d] %#x+%d", r.Name, r.Seq, r.Addr, r.Size)
		}
		if sampled == nil {
			fmt.Fprintf(stdout, "%7.2f%% %14v %9d  %s\n", t.Percent, time.Duration(t.Time), t.Entries, name)
		} else {
			fmt.Fprintf(stdout, "%7.2f%% %14v %14v %8d %8d %9d  %s\n", t.Percent, time.Duration(t.Time), time.Duration(t.OnCPU), t.Samples, t.Self, t.Entries, name)
		}
	}
	return nil
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
func readSamples(path string, pid uint32) (*samplesOf, error) {
	f, err := perfdata.Open(path)
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
