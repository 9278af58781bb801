package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/jitlog"
)

// TestJitlogCleanAndDump: clean removes a dead process's database and
// keeps this live one's; dump prints every record of it, by path and -p.
func TestJitlogCleanAndDump(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(jitlog.EnvDir, dir)
	l, err := jitlog.Open(jitlog.Options{Name: "dumptest"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	seq, err := l.CodeLoad(0x1000, 16, "hot loop", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Enter(7, seq); err != nil {
		t.Fatal(err)
	}
	if err := l.Exit(7); err != nil {
		t.Fatal(err)
	}
	if err := l.CodeUnload(seq); err != nil {
		t.Fatal(err)
	}

	// A dead process's database: ours, with the pid of a child that exited.
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(b[16:], uint32(child.Process.Pid))
	dead := jitlog.DatabasePath(dir, child.Process.Pid)
	if err := os.WriteFile(dead, b, 0o600); err != nil {
		t.Fatal(err)
	}

	var out, errOut bytes.Buffer
	if err := jitlogMain(&out, &errOut, []string{"clean", "--dir", dir}); err != nil {
		t.Fatalf("clean: %v\n%s", err, errOut.String())
	}
	if want := "removed " + dead + "\n"; out.String() != want {
		t.Errorf("clean printed %q, want %q", out.String(), want)
	}
	if _, err := os.Stat(l.Path()); err != nil {
		t.Errorf("clean removed the live database: %v", err)
	}
	out.Reset()
	if err := jitlogMain(&out, &errOut, []string{"clean", "--dir", dir}); err != nil || !strings.HasPrefix(out.String(), "nothing to remove") {
		t.Errorf("second clean: %v, printed %q", err, out.String())
	}

	for _, args := range [][]string{{"dump", l.Path()}, {"dump", "-p", strconv.Itoa(os.Getpid())}} {
		out.Reset()
		if err := jitlogMain(&out, &errOut, args); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut.String())
		}
		var kinds []string
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
			kind, _, _ := strings.Cut(line, " ")
			if kind != "clock" { // present where the TSC is used
				kinds = append(kinds, kind)
			}
		}
		want := []string{"header", "logger-open", "code-load", "region-enter", "region-exit", "code-unload"}
		if strings.Join(kinds, " ") != strings.Join(want, " ") {
			t.Errorf("%v: records %q, want %q\n%s", args, kinds, want, out.String())
		}
		for _, re := range []string{
			fmt.Sprintf(`(?m)^header version=2 pid=%d `, os.Getpid()),
			`(?m)^logger-open time=\d+ logger=1 name="dumptest"$`,
			fmt.Sprintf(`(?m)^code-load seq=%d time=\d+ addr=0x1000 size=16 logger=1 name="hot loop" code=0 `, seq),
			fmt.Sprintf(`(?m)^region-enter seq=%d time=\d+ tid=7 logger=1$`, seq),
		} {
			if !regexp.MustCompile(re).MatchString(out.String()) {
				t.Errorf("%v: no line matches %s:\n%s", args, re, out.String())
			}
		}
	}
}

func TestJitlogUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"frob"}, {"dump"}, {"dump", "-p", "1", "file"}, {"clean", "extra"}} {
		var out, errOut bytes.Buffer
		if err := jitlogMain(&out, &errOut, args); !errors.Is(err, cli.ErrUsage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	var out, errOut bytes.Buffer
	err := jitlogMain(&out, &errOut, []string{"dump", filepath.Join(t.TempDir(), "anon.1")})
	if err == nil || errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "anon.1") {
		t.Errorf("dump of a missing file: %v, want an error naming it", err)
	}
}
