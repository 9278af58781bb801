package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
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
	os.Exit(run(os.Args[1:], os.Stderr))
}

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
	var st exitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &st):
		return int(st)
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	fmt.Fprintf(stderr, "jitprof %s: %v\n", c.name, err)
	return 1
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

// errUsage reports bad arguments after the usage has been printed.
var errUsage = errors.New("usage")

// parseArgs parses flags anywhere among the positional arguments, as perf
// does (`jitprof dump FILE --stats`); everything after "--" is positional.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	return parse(fs, args, false)
}

// parseCommand parses flags up to the first positional argument, which
// starts a command line to run: `jitprof record -g ./app -flag` gives
// -flag to the app, as perf record does.
func parseCommand(fs *flag.FlagSet, args []string) ([]string, error) {
	return parse(fs, args, true)
}

func parse(fs *flag.FlagSet, args []string, stopAtPositional bool) ([]string, error) {
	// The flag package prints the usage on -h and on errors alike; asked
	// for, it goes to stdout, where it can be paged, and after an error to
	// stderr, after the error.
	u, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	var msg strings.Builder // the flag package's error, told as users type options
	fs.SetOutput(&msg)
	defer func() { fs.Usage = u; fs.SetOutput(out) }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			fs.SetOutput(out)
			if errors.Is(err, flag.ErrHelp) {
				writeUsage(os.Stdout, fs, u)
				return nil, err
			}
			fmt.Fprintf(out, "jitprof %s: %s", fs.Name(), optionMessage(msg.String()))
			writeUsage(out, fs, u)
			return nil, errUsage
		}
		rest := fs.Args()
		// The flag package consumes a "--" it stops at; if it did, all
		// that follows is positional.
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		if stopAtPositional {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// longOption is a long option with the flag package's one dash.
var longOption = regexp.MustCompile(`(^|[ :])-([A-Za-z][-A-Za-z0-9]+)`)

// optionMessage rewrites the flag package's error messages with options
// spelled as users type them: "flag provided but not defined: -bogus"
// is "unknown option --bogus".
func optionMessage(msg string) string {
	msg = strings.Replace(msg, "flag provided but not defined: ", "unknown option ", 1)
	msg = strings.Replace(msg, " for flag ", " for ", 1)
	msg = strings.Replace(msg, "flag needs an argument: ", "option needs an argument: ", 1)
	return longOption.ReplaceAllString(msg, "$1--$2")
}
