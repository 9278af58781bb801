package main

import (
	"errors"
	"os"
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
	return buildJitprof(t, t.TempDir())
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

// TestWebExecutable: jitprof web runs the jitprof-web beside jitprof (the
// help test sees its usage); without one there or on PATH it says what to
// build, and one that others may write is refused, as a handler's host.
func TestWebExecutable(t *testing.T) {
	built := jitprofBinary(t)
	b, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	alone := filepath.Join(t.TempDir(), "jitprof")
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(alone, "web", "-i", "perf.data")
	cmd.Env = append(os.Environ(), "PATH=/usr/bin:/bin")
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "jitprof web: the web view is its own executable, jitprof-web, found neither beside "+alone+" nor in $PATH: build it with go build") {
		t.Errorf("jitprof web without jitprof-web: exit %d\n%s", code, out)
	}

	web := filepath.Join(filepath.Dir(built), "jitprof-web")
	if err := os.Chmod(web, 0o775); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(built, "web", "-h")
	cmd.Env = append(os.Environ(), "PATH=/usr/bin:/bin")
	out, err = cmd.CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "writable by its group or by others") {
		t.Errorf("jitprof web with a group-writable jitprof-web: exit %d\n%s", code, out)
	}
}

// exitCode is a command's exit status: 0 for no error, -1 when it did not
// run or exit.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
