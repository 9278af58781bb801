package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/jitprof/jitprof/internal/cli"
)

func init() {
	register(&command{name: "help", summary: "list the commands, or print one's options: jitprof help COMMAND", run: runHelp})
	register(&command{name: "version", summary: "print jitprof's version, commit and Go version (also jitprof --version)", run: runVersion})
}

func runHelp(args []string) error {
	fs := flag.NewFlagSet("help", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "usage: jitprof help [COMMAND]") }
	pos, err := cli.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		usage(os.Stdout)
		return nil
	case len(pos) > 1:
		fs.Usage()
		return cli.ErrUsage
	}
	c, ok := commands[pos[0]]
	if !ok {
		return fmt.Errorf("unknown command %q (jitprof help lists them)", pos[0])
	}
	// Every command prints its usage and options on -h, to stdout.
	return c.run([]string{"-h"})
}

func runVersion(args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "usage: jitprof version") }
	pos, err := cli.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fs.Usage()
		return cli.ErrUsage
	}
	info, _ := debug.ReadBuildInfo()
	fmt.Println(version(info))
	return nil
}

// version says which jitprof this is, from what the Go toolchain wrote
// into the binary (info; nil if nothing): the module version ("(devel)"
// when built in its source tree), the commit, its time and whether the
// tree had changes, and the Go version. A binary built outside a git
// checkout, or with -buildvcs=false, has no commit.
func version(info *debug.BuildInfo) string {
	v, commit, when, modified := "(unknown)", "unknown (no VCS stamp in the binary)", "", false
	goVersion := runtime.Version()
	if info != nil {
		v, goVersion = info.Main.Version, info.GoVersion
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	var about []string
	if when != "" {
		about = append(about, when)
	}
	if modified {
		about = append(about, "modified")
	}
	if len(about) > 0 {
		commit += " (" + strings.Join(about, ", ") + ")"
	}
	return fmt.Sprintf("jitprof version %s commit %s %s %s/%s", v, commit, goVersion, runtime.GOOS, runtime.GOARCH)
}
