package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/termtext"
)

// command is one subcommand: `jitprof NAME ARGS...`.
type command struct {
	name    string
	summary string
	run     func(args []string) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// exitStatus is an error that carries the status jitprof should exit
// with, such as a profiled command's own status.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func main() {
	// A report lives for a second and builds tables it keeps to the end:
	// collecting at every doubling of the heap is a sixth of its CPU
	// time, for memory it would keep anyway. At 400 it stays below
	// perf report's (bench/RESULTS.md). The daemon lives on, and keeps
	// Go's default; so does a GOGC the user set.
	if _, set := os.LookupEnv("GOGC"); !set && (len(os.Args) < 2 || os.Args[1] != "daemon") {
		debug.SetGCPercent(400)
	}
	code := run(os.Args[1:], stderrText)
	stderrText.Flush()
	os.Exit(code)
}

// stderrText is standard error for jitprof's messages: notes and errors
// name what processes named (their commands, paths, JIT code), which a
// terminal must not act on (internal/termtext).
var stderrText = termtext.NewWriter(os.Stderr)

func run(args []string, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		args[0] = "help"
	case "--version":
		args[0] = "version"
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "jitprof: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	err := c.run(args[1:])
	if st := exitStatus(0); errors.As(err, &st) {
		return int(st)
	}
	return cli.ExitStatus(c.name, err, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: jitprof COMMAND [ARGS]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'jitprof help COMMAND' or 'jitprof COMMAND -h' for a command's options.")
}
