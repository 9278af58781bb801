package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/jitlog"
)

// hostileJITSource is a JIT whose every name is a terminal escape: its
// executable's path (the test puts it there), its comm (OSC 0, the
// window's title), the name in its perf map (OSC 52, the clipboard) and
// the directory of a jitdump marker it maps (CSI 2J, clear the screen),
// whose file is no jitdump, so that readers name its path in errors.
// Arguments: seconds to run, the directory. It prints "ready PID" once
// its code runs.
const hostileJITSource = `#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
	double secs = atof(argv[1]);
	prctl(PR_SET_NAME, "x\x1b]0;PWNED\x07", 0, 0, 0);
	static const unsigned char loop[] = {0x48, 0x89, 0xf9, 0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3};
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) { perror("mmap"); return 1; }
	memcpy(code, loop, sizeof loop);
	char path[4096];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
	FILE *f = fopen(path, "w");
	if (!f) { perror(path); return 1; }
	fprintf(f, "%lx %x jit\x1b]52;c;UFdORUQ=\x07spin\n", (unsigned long)code, (unsigned)sizeof loop);
	fclose(f);
	snprintf(path, sizeof path, "%s/jit-%d.dump", argv[2], (int)getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, "no jitdump, long enough to be read as one...", 44) != 44) { perror(path); return 1; }
	if (mmap(NULL, 44, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) { perror("mmap"); return 1; }
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	void (*run)(long) = (void (*)(long))code;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		run(20000000);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= secs) return 0;
	}
}
`

// TestTerminalEscapes: what a process names (its executable's path, its
// comm, its perf map's names, its jitdump's path, a jitlog database's
// names) reaches root's terminal escaped, in every command that prints
// text: report's rows, trees, CSV and folded stacks, annotate, dump,
// pathtime, jitlog dump, daemon status, and the notes and errors on
// standard error. No ESC or BEL byte may come out; the names must, as
// \x1b and \x07.
func TestTerminalEscapes(t *testing.T) {
	needRoot(t, "the daemon samples every process, as root")
	perftest.Perf(t)
	gcc := perftest.Need(t, "gcc")
	jitprof := buildJitprof(t, t.TempDir())
	dir := filepath.Join(t.TempDir(), "d\x1b[2J")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "hostile.c")
	if err := os.WriteFile(src, []byte(hostileJITSource), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "j\x1b]0;T\x07")
	perftest.Run(t, gcc, "-O1", "-o", exe, src)
	t.Cleanup(func() {
		ms, _ := filepath.Glob("/tmp/perf-*.map")
		for _, m := range ms {
			if b, _ := os.ReadFile(m); bytes.Contains(b, []byte("UFdORUQ=")) {
				os.Remove(m)
			}
		}
	})

	var said []string
	check := func(what, out string) {
		t.Helper()
		if i := strings.IndexAny(out, "\x1b\x07"); i >= 0 {
			t.Errorf("%s prints a raw %q: %q", what, out[i], out[max(0, i-40):min(len(out), i+40)])
		}
		said = append(said, out)
	}
	jp := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(jitprof, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run() // refusals and errors are output too
		check("jitprof "+strings.Join(args, " ")+"'s output", stdout.String())
		check("jitprof "+strings.Join(args, " ")+"'s standard error", stderr.String())
		return stdout.String() + stderr.String()
	}

	data := filepath.Join(t.TempDir(), "hostile.data")
	jp("record", "-g", "-o", data, "--", exe, "1", dir)
	var all strings.Builder
	for _, args := range [][]string{
		{"report", "-i", data, "--anon-samples", "-l", "-v", "--sort", "comm,pid,dso,sym"},
		{"report", "-i", data, "--anon-samples", "-g", "--sort", "comm,sym"},
		{"report", "-i", data, "--anon-samples", "--format", "csv", "--sort", "comm,dso,sym"},
		{"report", "-i", data, "--anon-samples", "--format", "folded"},
		{"report", "-i", data, "--anon-samples", "--anon-handler", "jitdump", "-v"},
		{"annotate", "-i", data, "--anon-samples"},
		{"dump", "-i", data},
		{"report", "-i", filepath.Join(dir, "missing.data")},
	} {
		all.WriteString(jp(args...))
	}
	for _, want := range []string{`x\x1b]0;PWNED\x07`, `jit\x1b]52;c;UFdORUQ=\x07spin`, `j\x1b]0;T\x07`, `d\x1b[2J`} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("no output names %s", want)
		}
	}

	// A jitlog database's names: jitlog dump and pathtime.
	logDir := t.TempDir()
	t.Setenv(jitlog.EnvDir, logDir)
	l, err := jitlog.Open(jitlog.Options{Name: "log\x1b]0;L\x07"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	seq, err := l.CodeLoad(0x1000, 16, "loop\x1b]0;L\x07", nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Enter(7, seq)
	l.Exit(7)
	pid := strconv.Itoa(os.Getpid())
	if out := jp("jitlog", "dump", "-p", pid) + jp("pathtime", "-p", pid); !strings.Contains(out, `loop\x1b]0;L\x07`) {
		t.Errorf("jitlog dump and pathtime do not name the region:\n%s", out)
	}

	// The daemon follows the JIT and says what it could not read.
	session := t.TempDir()
	jp("daemon", "start", "-a", "--session-dir", session)
	t.Cleanup(func() { exec.Command(jitprof, "daemon", "stop", "--session-dir", session).Run() })
	startJIT(t, exec.Command(exe, "30", dir))
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := jp("daemon", "status", "--session-dir", session)
		if strings.Contains(st, `d\x1b[2J`) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("daemon status does not name the JIT's jitdump in 20 s:\n%s", st)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	jp("daemon", "dump", "--session-dir", session)
	jp("daemon", "stop", "--session-dir", session)
	if out := jp("report", "--session", "--session-dir", session, "--anon-samples", "-l"); !strings.Contains(out, `jit\x1b]52;c;UFdORUQ=\x07spin`) {
		t.Errorf("report --session does not name the JIT's code:\n%s", out)
	}
	if t.Failed() {
		t.Logf("what jitprof said:\n%s", strings.Join(said, "\n"))
	}
}
