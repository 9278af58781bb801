package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/termtext"
	"github.com/jitprof/jitprof/jitlog"
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
	fs.StringVar(dir, "dir", jitlog.DefaultDir(), "the jitlog `directory`")
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

// jitlogClean removes the databases of processes that are gone, as seed
// 000 asks at the start of a session; live processes' stay.
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
	removed, err := jitlog.Cleanup(*dir)
	for _, p := range removed {
		fmt.Fprintf(stdout, "removed %s\n", p)
	}
	if err != nil {
		return err // it names the directory or file
	}
	if len(removed) == 0 {
		fmt.Fprintf(stdout, "nothing to remove in %s\n", *dir)
	}
	return nil
}

// jitlogDump prints a database's records, one line each, in file order.
func jitlogDump(stdout, stderr io.Writer, args []string) error {
	pid, force := new(int), new(bool)
	fs := jitlogDumpFlags(stderr, pid, force)
	pos, err := cli.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	path, owner, err := database(fs, *pid, pos)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# %s\n", path)
	return scanDatabase(fs, path, owner, *force, stderr, func(r jitlog.Record) error {
		_, err := fmt.Fprintln(stdout, jitlog.Line(r))
		return err
	})
}

// database returns the path of the jitlog database named by -p PID or a
// path, for the commands that read one, and the uid it must belong to:
// that process's user for a running process's database, the user running
// jitprof for any other (internal/trust).
func database(fs *flag.FlagSet, pid int, pos []string) (path string, owner int, err error) {
	owner = os.Geteuid()
	switch {
	case pid != 0 && len(pos) == 0:
		path = jitlog.DatabasePath(jitlog.DefaultDir(), pid)
		if uid, ok := jitlog.ProcessOwner(pid); ok {
			owner = uid
		}
	case pid == 0 && len(pos) == 1:
		path = pos[0]
	default:
		fs.Usage()
		return "", 0, cli.ErrUsage
	}
	return path, owner, nil
}

// scanDatabase calls fn with each record of the database at path, one at
// a time, keeping none: databases can be bigger than memory. A torn last
// record (the JIT was killed) is a warning, the records before it are
// read.
func scanDatabase(fs *flag.FlagSet, path string, owner int, force bool, stderr io.Writer, fn func(jitlog.Record) error) error {
	n := 0
	err := jitlog.Scan(path, &jitlog.ReadOptions{Owner: owner, Force: force}, func(r jitlog.Record) error {
		n++
		return fn(r)
	})
	if err != nil && (n == 0 || !errors.Is(err, jitlog.ErrTorn)) {
		return err
	}
	if err != nil {
		fmt.Fprintf(stderr, "jitprof %s: warning: %v\n", fs.Name(), err)
	}
	return nil
}
