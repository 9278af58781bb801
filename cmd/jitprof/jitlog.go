package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/jitlogdb"
	"github.com/jitprof/jitprof/internal/termtext"
)

func init() {
	register(&command{name: "jitlog", summary: "clean up or dump JIT data logger databases (anon.PID)", run: runJitlog})
}

func runJitlog(args []string) error { return jitlogMain(os.Stdout, stderrText, args) }

// jitlogMain runs "jitprof jitlog clean|dump" writing to stdout and stderr.
func jitlogMain(stdout, stderr io.Writer, args []string) error {
	// The databases' names are the JIT's: escaped for the terminal.
	out := termtext.NewWriter(stdout)
	defer out.Flush()
	stdout = out
	const synopsis = "usage: jitprof jitlog clean [--dir DIR]\n       jitprof jitlog dump [-p PID | DATABASE] [--force]"
	if len(args) == 0 {
		fmt.Fprintln(stderr, synopsis)
		return cli.ErrUsage
	}
	switch args[0] {
	case "clean":
		return jitlogClean(stdout, stderr, args[1:])
	case "dump":
		return jitlogDump(stdout, stderr, args[1:])
	case "-h", "-help", "--help":
		fmt.Fprintln(stdout, synopsis)
		for _, fs := range []*flag.FlagSet{jitlogCleanFlags(stdout, new(string)), jitlogDumpFlags(stdout, new(int), new(bool))} {
			fmt.Fprintf(stdout, "\njitprof %s:\n", fs.Name())
			cli.PrintFlags(fs)
		}
		return flag.ErrHelp
	}
	fmt.Fprintln(stderr, synopsis)
	return cli.ErrUsage
}

func jitlogCleanFlags(w io.Writer, dir *string) *flag.FlagSet {
	fs := flag.NewFlagSet("jitlog clean", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.StringVar(dir, "dir", jitlogdb.DefaultDir(), "the jitlog `directory`")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof jitlog clean [--dir DIR]  (removes the databases of processes that are gone)")
		cli.PrintFlags(fs)
	}
	return fs
}

func jitlogDumpFlags(w io.Writer, pid *int, force *bool) *flag.FlagSet {
	fs := flag.NewFlagSet("jitlog dump", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.IntVar(pid, "p", 0, "dump the database of process `pid` (in $JITPROF_JITLOG_DIR or /tmp/jitprof-UID)")
	fs.BoolVar(force, "force", false, "read a database owned by another user than the process's (or yours), with several links, or over the size limit")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof jitlog dump [-p PID | DATABASE] [--force]")
		cli.PrintFlags(fs)
	}
	return fs
}

// jitlogClean removes the databases of processes that are gone.
func jitlogClean(stdout, stderr io.Writer, args []string) error {
	dir := new(string)
	fs := jitlogCleanFlags(stderr, dir)
	pos, err := cli.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		fs.Usage()
		return cli.ErrUsage
	}
	return jitlogdb.Clean(stdout, *dir)
}

// jitlogDump prints a database's records, one line each, in file order.
func jitlogDump(stdout, stderr io.Writer, args []string) error {
	pid, force := new(int), new(bool)
	fs := jitlogDumpFlags(stderr, pid, force)
	pos, err := cli.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	db, err := database(fs, *pid, pos, *force)
	if err != nil {
		return err
	}
	return jitlogdb.Dump(stdout, stderr, db)
}

// database is the jitlog database named by -p PID or a path, for the
// commands that read one.
func database(fs *flag.FlagSet, pid int, pos []string, force bool) (jitlogdb.Database, error) {
	switch {
	case pid != 0 && len(pos) == 0:
		return jitlogdb.Locate(pid, "", force), nil
	case pid == 0 && len(pos) == 1:
		return jitlogdb.Locate(0, pos[0], force), nil
	}
	fs.Usage()
	return jitlogdb.Database{}, cli.ErrUsage
}
