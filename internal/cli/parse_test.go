package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		args    []string
		command bool
		pos     []string
		stats   bool
	}{
		{[]string{"file", "--stats"}, false, []string{"file"}, true},
		{[]string{"--stats", "file"}, false, []string{"file"}, true},
		{[]string{"--", "--stats"}, false, []string{"--stats"}, false},
		{[]string{"--stats", "--", "./app", "-x", "--", "y"}, true, []string{"./app", "-x", "--", "y"}, true},
		{[]string{"--stats", "./app", "--stats", "-y"}, true, []string{"./app", "--stats", "-y"}, true},
		{[]string{"./app", "--stats"}, true, []string{"./app", "--stats"}, false},
		{[]string{"a", "b", "--stats"}, false, []string{"a", "b"}, true},
	}
	for _, c := range cases {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		stats := fs.Bool("stats", false, "")
		var pos []string
		var err error
		if c.command {
			pos, err = ParseCommand(fs, c.args)
		} else {
			pos, err = ParseArgs(fs, c.args)
		}
		if err != nil || !reflect.DeepEqual(pos, c.pos) || *stats != c.stats {
			t.Errorf("%q (command %v): %q, stats %v, %v; want %q, stats %v", c.args, c.command, pos, *stats, err, c.pos, c.stats)
		}
	}
}

func TestOptionMessage(t *testing.T) {
	for in, want := range map[string]string{
		"flag provided but not defined: -bogus\n":                  "unknown option --bogus\n",
		"flag provided but not defined: -x\n":                      "unknown option -x\n",
		`invalid value "-5x" for flag -freq: bad` + "\n":           `invalid value "-5x" for --freq: bad` + "\n",
		`invalid value "abc" for flag -F: want a frequency` + "\n": `invalid value "abc" for -F: want a frequency` + "\n",
		"flag needs an argument: -sort\n":                          "option needs an argument: --sort\n",
	} {
		if got := optionMessage(in); got != want {
			t.Errorf("optionMessage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestExitStatus(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
		msg  string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{fmt.Errorf("report: %w", ErrUsage), 2, ""},
		{errors.New("no perf.data"), 1, "jitprof web: no perf.data\n"},
	} {
		var b strings.Builder
		if code := ExitStatus("web", c.err, &b); code != c.code || b.String() != c.msg {
			t.Errorf("ExitStatus(%v) = %d, wrote %q; want %d, %q", c.err, code, b.String(), c.code, c.msg)
		}
	}
}
