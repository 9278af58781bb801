package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// ErrUsage reports bad arguments after the usage has been printed.
var ErrUsage = errors.New("usage")

// ExitStatus is what jitprof exits with after command name returned err:
// 0 for none or for -h, 2 for bad arguments (the usage said why), and
// otherwise 1, once err is written to stderr.
func ExitStatus(name string, err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrUsage):
		return 2
	}
	fmt.Fprintf(stderr, "jitprof %s: %v\n", name, err)
	return 1
}

// ParseArgs parses flags anywhere among the positional arguments, as perf
// does (`jitprof dump FILE --stats`); everything after "--" is positional.
func ParseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	return parse(fs, args, false)
}

// ParseCommand parses flags up to the first positional argument, which
// starts a command line to run: `jitprof record -g ./app -flag` gives
// -flag to the app, as perf record does.
func ParseCommand(fs *flag.FlagSet, args []string) ([]string, error) {
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
			return nil, ErrUsage
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

// PrintFlags lists the flags of fs on its output as users type them:
// -x for a one-letter name, --name for a longer one, the spellings of one
// option on one line (flags that share a variable, or whose usage says
// "same as -x"), with the value's placeholder and the default.
func PrintFlags(fs *flag.FlagSet) {
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
		PrintFlags(fs)
		return
	}
	u()
}
