package main

import (
	"flag"
	"fmt"
	"path/filepath"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/daemon"
	"github.com/jitprof/jitprof/internal/sampledb"
)

func init() {
	register(&command{name: "import", summary: "put a perf.data (perf's or jitprof's) into the daemon's sample database, as a session", run: runImport})
}

func runImport(args []string) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	session := fs.String("session", "", "import into a new saved session `NAME` (default: the current session)")
	dir := fs.String("session-dir", "", "the session `directory` (default as jitprof daemon's)")
	sep := fs.String("separate", "none", "keep sample files apart by: a comma list of none, lib, kernel, thread, cpu, all")
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
	s, err := sampledb.ParseSeparate(*sep)
	if err != nil {
		return err
	}
	if *dir == "" {
		*dir = daemon.DefaultDir()
	}
	if *dir, err = filepath.Abs(*dir); err != nil {
		return err
	}
	f, err := openRecording(input, *force)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := daemon.Import(f, *dir, *session, s)
	if err != nil {
		return fmt.Errorf("%s: %w", input, err)
	}
	where := "the current session"
	if *session != "" {
		where = "session " + *session
	}
	fmt.Fprintf(stderrText, "jitprof import: %d samples (%d lost, %d in no mapping) into %d sample files of %s in %s; JIT data of %d processes\n",
		res.Samples, res.Lost, res.Unresolved, res.Files, where, *dir, res.JITProcesses)
	return nil
}
