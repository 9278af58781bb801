package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"testing"
)

func TestVersionText(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "8da825c"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	want := "jitprof version v1.2.3 commit 8da825c (2026-01-02T03:04:05Z, modified) go1.26.8 " + runtime.GOOS + "/" + runtime.GOARCH
	if got := version(info); got != want {
		t.Errorf("version = %q, want %q", got, want)
	}
	if got := version(nil); !strings.Contains(got, "commit unknown") || !strings.Contains(got, runtime.Version()) {
		t.Errorf("version without build info = %q", got)
	}
}

// jitprofBinary builds jitprof as a user would.
func jitprofBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "jitprof")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestVersion: jitprof version and --version say what go version -m
// reads from the same binary: module version, commit, Go version.
func TestVersion(t *testing.T) {
	bin := jitprofBinary(t)
	m, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	goVersion, modVersion, commit := "", "", "unknown"
	for i, line := range strings.Split(string(m), "\n") {
		f := strings.Fields(line)
		switch {
		case i == 0 && len(f) == 2:
			goVersion = f[1]
		case len(f) >= 3 && f[0] == "mod":
			modVersion = f[2]
		case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision="):
			commit = strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatalf("jitprof %s: %v", arg, err)
		}
		want := "jitprof version " + modVersion + " commit " + commit
		if s := string(out); !strings.HasPrefix(s, want) || !strings.Contains(s, " "+goVersion+" ") {
			t.Errorf("jitprof %s = %q, want %q ... %s (go version -m:\n%s)", arg, s, want, goVersion, m)
		}
	}
}

// singleDashLong matches an option listed with one dash before a long
// name (-call-graph), which users cannot type as perf's --call-graph.
var singleDashLong = regexp.MustCompile(`(?m)^\s+-[A-Za-z][-A-Za-z]+\b`)

// TestHelp: jitprof help lists every command, one line each; help CMD
// and CMD -h print that command's usage and options, on stdout, the same
// text, with long options as users type them.
func TestHelp(t *testing.T) {
	bin := jitprofBinary(t)
	out, err := exec.Command(bin, "help").Output()
	if err != nil {
		t.Fatalf("jitprof help: %v", err)
	}
	var listed []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(line, "  ") {
			listed = append(listed, f[0])
		}
	}
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	if strings.Join(listed, " ") != strings.Join(names, " ") {
		t.Errorf("jitprof help lists %q, want every command once: %q\n%s", listed, names, out)
	}
	for _, name := range names {
		help, err := exec.Command(bin, "help", name).Output()
		if err != nil {
			t.Errorf("jitprof help %s: %v", name, err)
			continue
		}
		dashH, err := exec.Command(bin, name, "-h").Output()
		if err != nil && name != "help" {
			t.Errorf("jitprof %s -h: %v", name, err)
		}
		if !strings.HasPrefix(string(help), "usage: jitprof "+name) || name != "help" && string(dashH) != string(help) {
			t.Errorf("jitprof help %s:\n%s\njitprof %s -h:\n%s", name, help, name, dashH)
		}
		if m := singleDashLong.FindString(string(help)); m != "" {
			t.Errorf("jitprof help %s lists %q with one dash:\n%s", name, m, help)
		}
	}
	record, _ := exec.Command(bin, "help", "record").Output()
	for _, want := range []string{"  -F, --freq FREQUENCY", "  --call-graph FP", "  -o, --output FILE"} {
		if !strings.Contains(string(record), want) {
			t.Errorf("jitprof help record lacks %q:\n%s", want, record)
		}
	}
	if out, err := exec.Command(bin, "help", "nosuch").CombinedOutput(); err == nil || !strings.Contains(string(out), `unknown command "nosuch"`) {
		t.Errorf("jitprof help nosuch: %v\n%s", err, out)
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
