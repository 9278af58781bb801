package main

import (
	"flag"
	"fmt"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/driver"
	"github.com/jitprof/jitprof/internal/ingest"
	"github.com/jitprof/jitprof/internal/unwind"
)

func init() {
	register(&command{name: "import", summary: "put a perf.data (perf's or jitprof's) into the daemon's sample database, as a session", run: runImport})
}

func runImport(args []string) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	session := fs.String("session", "", "import into a new saved session `NAME` (default: the current session)")
	var dir cli.SessionDir
	dir.Register(fs)
	var sep cli.Separate
	sep.Register(fs)
	force := fs.Bool("force", false, "read a recording owned by neither you nor root (as perf -f)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof import [--session NAME] [--session-dir DIR] [--separate ...] [perf.data]")
		cli.PrintFlags(fs)
	}
	pos, err := cli.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		fs.Usage()
		return cli.ErrUsage
	}
	input := "perf.data"
	if len(pos) == 1 {
		input = pos[0]
	}
	d, err := dir.Abs()
	if err != nil {
		return err
	}
	rec, err := driver.OpenRecording(input, *force)
	if err != nil {
		return err
	}
	defer rec.Close()
	res, err := ingest.Import(rec.File(), d, *session, sep.Separate)
	if err != nil {
		return fmt.Errorf("%s: %w", input, err)
	}
	where := "the current session"
	if *session != "" {
		where = "session " + *session
	}
	unwound := ""
	if u := res.Unwound; u.Chains > 0 {
		unwound = fmt.Sprintf("; %d call chains unwound from user stacks, %d stopped in JIT code", u.Chains, u.Stops[unwind.StopJIT])
	}
	fmt.Fprintf(stderrText, "jitprof import: %d samples (%d lost, %d in no mapping) into %d sample files of %s in %s; JIT data of %d processes%s\n",
		res.Samples, res.Lost, res.Unresolved, res.Files, where, d, res.JITProcesses, unwound)
	return nil
}
