package main

import (
	"flag"
	"io"
	"reflect"
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
			pos, err = parseCommand(fs, c.args)
		} else {
			pos, err = parseArgs(fs, c.args)
		}
		if err != nil || !reflect.DeepEqual(pos, c.pos) || *stats != c.stats {
			t.Errorf("%q (command %v): %q, stats %v, %v; want %q, stats %v", c.args, c.command, pos, *stats, err, c.pos, c.stats)
		}
	}
}
