package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"
)

type options struct {
	Duration  time.Duration
	JitlogDir string
	Jitdump   bool
	PerfMap   bool
	Prelude   int
}

func main() {
	var opts options
	flag.DurationVar(&opts.Duration, "duration", 2*time.Second, "CPU time of JIT work to run")
	flag.StringVar(&opts.JitlogDir, "jitlog-dir", "", "directory of the jitlog database (default $JITPROF_JITLOG_DIR or /tmp/jitprof-<euid>)")
	flag.BoolVar(&opts.Jitdump, "jitdump", false, "also write perf's jitdump, jit-<pid>.dump, next to the jitlog database")
	flag.BoolVar(&opts.PerfMap, "perfmap", false, "also append every load to /tmp/perf-<pid>.map, as V8's --perf-basic-prof does (a map has no times: re-generated code makes it ambiguous)")
	flag.IntVar(&opts.Prelude, "prelude", 0, "first compile this many generations that never run, which shifts the sequence numbers of the schedule's (as differs between runs of a real JIT)")
	truthPath := flag.String("truth", "", "write the measured split of JIT CPU time to this file as JSON")
	quiet := flag.Bool("quiet", false, "print nothing")
	flag.Parse()
	if flag.NArg() > 0 || opts.Duration <= 0 || opts.Prelude < 0 {
		flag.Usage()
		os.Exit(2)
	}
	var out io.Writer = os.Stdout
	if *quiet {
		out = io.Discard
	}
	if err := runMain(opts, *truthPath, out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func runMain(opts options, truthPath string, out io.Writer) error {
	truth, err := jit(opts, out)
	if err != nil {
		return err
	}
	if truthPath != "" {
		b, err := json.MarshalIndent(truth, "", "\t")
		if err != nil {
			return fmt.Errorf("minijit: truth: %w", err)
		}
		if err := os.WriteFile(truthPath, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("minijit: truth: %w", err)
		}
	}
	return printTruth(out, truth)
}

// printTruth writes the measured split as a table.
func printTruth(w io.Writer, t *Truth) error {
	fmt.Fprintf(w, "JIT CPU time %v:\n", time.Duration(t.CPUNs))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "seq\tslot\taddress\tsize\tname\tcalls\tcpu\tpercent\ttarget\t")
	for _, g := range t.Generations {
		fmt.Fprintf(tw, "%d\t%d\t%#x\t%d\t%s\t%d\t%v\t%.2f%%\t%.2f%%\t\n",
			g.Seq, g.Slot, g.Addr, g.Size, g.Name, g.Calls, time.Duration(g.CPUNs).Round(time.Millisecond), g.Share, g.Target)
	}
	return tw.Flush()
}
