package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/jitprof/jitprof/internal/pathtime"
	"github.com/jitprof/jitprof/jitlog"
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
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	var path string
	owner := os.Getuid()
	switch {
	case *pid != 0 && len(pos) == 0:
		path = jitlog.DatabasePath(jitlog.DefaultDir(), *pid)
		// Trust the process's own user's database, not only ours.
		if st, err := os.Stat("/proc/" + strconv.Itoa(*pid)); err == nil {
			if sys, ok := st.Sys().(*syscall.Stat_t); ok {
				owner = int(sys.Uid)
			}
		}
	case *pid == 0 && len(pos) == 1:
		path = pos[0]
	default:
		fs.Usage()
		return errUsage
	}
	recs, err := jitlog.Read(path, &jitlog.ReadOptions{Owner: owner, Force: *force})
	if err != nil && len(recs) == 0 {
		return err
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "jitprof pathtime: %s: warning: %v\n", path, err)
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
