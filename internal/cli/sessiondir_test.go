package cli

import (
	"bytes"
	"errors"
	"flag"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jitprof/jitprof/internal/sampledb"
)

// TestSessionDir: --session-dir as given, else $JITPROF_SESSION_DIR;
// Abs makes it absolute for the daemon, which runs in /.
func TestSessionDir(t *testing.T) {
	t.Setenv("JITPROF_SESSION_DIR", "/srv/sessions")
	for _, c := range []struct {
		args     []string
		dir, abs string
	}{
		{nil, "/srv/sessions", "/srv/sessions"},
		{[]string{"--session-dir", "rel"}, "rel", "rel"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var d SessionDir
		d.Register(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		abs, err := d.Abs()
		if wantAbs, _ := filepath.Abs(c.abs); d.Dir() != c.dir || err != nil || abs != wantAbs {
			t.Errorf("%v: Dir %q, Abs %q, %v; want %q, %q", c.args, d.Dir(), abs, err, c.dir, wantAbs)
		}
	}
}

// TestSeparate: --separate is parsed once, when given, as opcontrol's
// list; none by default; a bad word is the flag's error.
func TestSeparate(t *testing.T) {
	for _, c := range []struct {
		args []string
		want sampledb.Separate
		bad  bool
	}{
		{nil, sampledb.SeparateNone, false},
		{[]string{"--separate", "lib,thread"}, sampledb.SeparateLib | sampledb.SeparateThread, false},
		{[]string{"--separate=all"}, sampledb.SeparateAll, false},
		{[]string{"--separate", "bogus"}, 0, true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(new(bytes.Buffer))
		var s Separate
		s.Register(fs)
		err := fs.Parse(c.args)
		if (err != nil) != c.bad || !c.bad && s.Separate != c.want {
			t.Errorf("%v: %v, %v; want %v (error: %v)", c.args, s.Separate, err, c.want, c.bad)
		}
	}
}

// TestInputCheck: positional arguments are a session's specification
// only, and a session and an archive are not both read.
func TestInputCheck(t *testing.T) {
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"-i", "x.data"}, true},
		{[]string{"-i", "x.data", "extra"}, false},
		{[]string{"--session", "image:/bin/ls"}, true},
		{[]string{"--session", "--archive", "a.tar.gz"}, false},
		{[]string{"--archive", "a.tar.gz"}, true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(new(bytes.Buffer))
		var in InputFlags
		in.Register(fs)
		pos, err := ParseArgs(fs, c.args)
		if err != nil {
			t.Fatal(err)
		}
		err = in.Check(fs, "report", pos)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, ErrUsage) {
			t.Errorf("%v: %v, want ok %v", c.args, err, c.ok)
		}
	}
}

// TestSpecWords: a first word naming a session selects it (report
// --session monday image:node), a first word that is an image stays one,
// and --session=NAME comes first.
func TestSpecWords(t *testing.T) {
	avail := []string{"current", "monday"}
	for _, c := range []struct {
		name  string
		words []string
		want  []string
	}{
		{"", []string{"monday", "image:node"}, []string{"session:monday", "image:node"}},
		{"", []string{"node", "tgid:1"}, []string{"node", "tgid:1"}},
		{"", []string{"image:monday"}, []string{"image:monday"}},
		{"tuesday", []string{"monday"}, []string{"session:tuesday", "monday"}},
		{"", nil, nil},
	} {
		if got := specWords(c.name, c.words, avail); !slices.Equal(got, c.want) {
			t.Errorf("specWords(%q, %q) = %q, want %q", c.name, c.words, got, c.want)
		}
	}
}
