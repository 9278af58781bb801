package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/jitprof/jitprof/internal/pathtime"
)

func init() {
	register(&command{name: "pathtime", summary: "time per compiled region from a JIT's logged enter/exit events (exact, not sampled)", run: runPathtime})
}

func runPathtime(args []string) error {
	fs := flag.NewFlagSet("pathtime", flag.ContinueOnError)
	pid := fs.Int("p", 0, "read the jitlog database of process `pid` (in $JITPROF_JITLOG_DIR or /tmp/jitprof-UID)")
	nested := fs.Bool("nested", false, "an enter inside a region is a call charged to the caller, not a jump")
	force := fs.Bool("force", false, "read a database not owned by you or root")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof pathtime [-p PID | DATABASE] [--nested]")
		printFlags(fs)
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	recs, path, err := readDatabase(fs, *pid, pos, *force, os.Stderr)
	if err != nil {
		return err
	}
	events, regions := pathtime.FromJitlog(recs)
	res, err := pathtime.Compute(events, pathtime.Options{Nested: *nested})
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fmt.Printf("# %s: %d events, %d regions entered, %v in compiled regions\n", path, len(events), len(res.Totals), time.Duration(res.Total))
	if res.Unmatched > 0 {
		fmt.Printf("# %d exits outside any region (logging started inside one)\n", res.Unmatched)
	}
	fmt.Printf("%8s %14s %9s  %s\n", "Time%", "Time", "Entries", "Region")
	for _, t := range res.Totals {
		name := "seq " + strconv.FormatUint(t.Region, 10)
		if r, ok := regions[t.Region]; ok {
			name = fmt.Sprintf("%s [seq %d] %#x+%d", r.Name, r.Seq, r.Addr, r.Size)
		}
		fmt.Printf("%7.2f%% %14v %9d  %s\n", t.Percent, time.Duration(t.Time), t.Entries, name)
	}
	return nil
}
