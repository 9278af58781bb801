package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
)

func init() {
	register(&command{name: "help", summary: "list the commands, or print one's options: jitprof help COMMAND", run: runHelp})
	register(&command{name: "version", summary: "print jitprof's version, commit and Go version (also jitprof --version)", run: runVersion})
}

func runHelp(args []string) error {
	fs := flag.NewFlagSet("help", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "usage: jitprof help [COMMAND]") }
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		usage(os.Stdout)
		return nil
	case len(pos) > 1:
		fs.Usage()
		return errUsage
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
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fs.Usage()
		return errUsage
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

// printFlags lists the flags of fs on its output as users type them:
// -x for a one-letter name, --name for a longer one, the spellings of one
// option on one line (flags that share a variable, or whose usage says
// "same as -x"), with the value's placeholder and the default.
func printFlags(fs *flag.FlagSet) {
	type option struct {
		names []string
		flag  *flag.Flag // the one whose usage describes the option
	}
	var opts []*option
	byName := map[string]*option{}
	byVar := map[any]*option{}
	fs.VisitAll(func(f *flag.Flag) {
		o := byName[aliasOf(f.Usage)]
		key := varKey(f.Value)
		if o == nil && key != nil {
			o = byVar[key]
		}
		if o == nil {
			o = &option{flag: f}
			opts = append(opts, o)
		} else if aliasOf(o.flag.Usage) != "" && aliasOf(f.Usage) == "" {
			o.flag = f
		}
		o.names = append(o.names, f.Name)
		byName[f.Name] = o
		if key != nil {
			byVar[key] = o
		}
	})
	// VisitAll goes in name order: an alias may come before its option.
	for _, o := range opts {
		if target := byName[aliasOf(o.flag.Usage)]; target != nil && target != o {
			target.names = append(target.names, o.names...)
			o.names = nil
		}
	}
	opts = slices.DeleteFunc(opts, func(o *option) bool { return len(o.names) == 0 })
	for _, o := range opts {
		slices.SortFunc(o.names, func(a, b string) int {
			if len(a) == 1 || len(b) == 1 {
				return len(a) - len(b)
			}
			return strings.Compare(a, b)
		})
	}
	// In the order of their long names, as perf's and git's help are.
	long := func(o *option) string { return strings.ToLower(o.names[len(o.names)-1]) }
	slices.SortFunc(opts, func(a, b *option) int { return strings.Compare(long(a), long(b)) })

	w := fs.Output()
	for _, o := range opts {
		spell := make([]string, len(o.names))
		for i, n := range o.names {
			spell[i] = "--" + n
			if len(n) == 1 {
				spell[i] = "-" + n
			}
		}
		arg, usage := flag.UnquoteUsage(o.flag)
		head := "  " + strings.Join(spell, ", ")
		if arg != "" {
			head += " " + strings.ToUpper(arg)
		}
		if d := o.flag.DefValue; d != "" && d != "0" && d != "false" && d != "0s" && !strings.Contains(usage, "default") {
			usage += " (default " + d + ")"
		}
		if len(head) <= 28 {
			fmt.Fprintf(w, "%-30s%s\n", head, usage)
		} else {
			fmt.Fprintf(w, "%s\n%30s%s\n", head, "", usage)
		}
	}
}

// aliasOf returns the option an alias's usage names ("same as -i" or
// "same as --sort, as perf spells it": i, sort), or "".
func aliasOf(usage string) string {
	rest, ok := strings.CutPrefix(usage, "same as -")
	if !ok {
		return ""
	}
	rest = strings.TrimPrefix(rest, "-")
	if i := strings.IndexAny(rest, " ,;"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// varKey identifies the variable behind a flag's value when it is a
// pointer (StringVar, BoolVar ...), so that flags sharing one are one
// option; nil otherwise (Func values).
func varKey(v flag.Value) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil
	}
	return struct {
		t reflect.Type
		p uintptr
	}{rv.Type(), rv.Pointer()}
}

// writeUsage prints fs's usage on w: its own Usage, or its name and
// flags.
func writeUsage(w io.Writer, fs *flag.FlagSet, u func()) {
	out := fs.Output()
	fs.SetOutput(w)
	defer fs.SetOutput(out)
	if u == nil {
		fmt.Fprintf(w, "usage: jitprof %s [options]\n", fs.Name())
		printFlags(fs)
		return
	}
	u()
}
