package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/trust"
)

// nsSpinSource is a user's CPU-bound program; FN is its hot function's
// name. It prints "ready" once started and runs for argv[1] seconds.
const nsSpinSource = `#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static volatile double sink;
__attribute__((noinline)) double FN(long n) { volatile double s = 0; for (long i = 0; i < n; i++) s += i * 0.5; return s; }
int main(int argc, char **argv) {
	double secs = atof(argv[1]);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		sink += FN(10000000);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= secs) return 0;
	}
}
`

// TestNamespaceBinary: a user runs their program from a directory that
// exists only in a mount namespace of their own (a tmpfs mounted over an
// empty directory of theirs). While it runs, root's jitprof record -p and
// report name its functions, reading the program through
// /proc/PID/root as perf does, and perf's own report agrees; jitprof
// report names them in perf's recording too. Then the user bind-mounts a
// root-only program over that path (which they may name but not read):
// its functions must not reach the report, as the program is read with
// the user's rights.
func TestNamespaceBinary(t *testing.T) {
	needRoot(t, "the program is another user's, in their own mount namespace")
	perf := perftest.Perf(t)
	gcc := perftest.Need(t, "gcc")
	setpriv, unshare := perftest.Need(t, "setpriv"), perftest.Need(t, "unshare")
	dir, uid, gid := userDir(t)
	jitprof := buildJitprof(t, t.TempDir())
	build := func(fn, to string) {
		src := filepath.Join(t.TempDir(), fn+".c")
		os.WriteFile(src, []byte(strings.ReplaceAll(nsSpinSource, "FN", fn)), 0o644)
		perftest.Run(t, gcc, "-O1", "-o", to, src)
	}
	userBin := filepath.Join(filepath.Dir(dir), "ns_prog") // where the user can copy it from
	build("ns_spin", userBin)
	os.Chown(userBin, uid, gid)
	// A root-only program, in a directory the user can pass through.
	secretBin := filepath.Join(filepath.Dir(dir), "secret_prog")
	build("secret_fn", secretBin)
	os.Chmod(secretBin, 0o700)
	mnt := filepath.Join(dir, "ns-only")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(mnt, uid, gid)
	prog := filepath.Join(mnt, "prog")

	// run starts the user's program in its namespace; with attack, once
	// it runs, the root-only program is bind-mounted over its path.
	run := func(attack bool) int {
		script := `mount -t tmpfs none "$1" && cp "$2" "$1/prog" && "$1/prog" 30 & sleep 0.3; `
		if attack {
			script = `mount -t tmpfs none "$1" && cp "$2" "$1/prog" && { "$1/prog" 30 & sleep 0.3; mount --bind "$3" "$1/prog"; }; `
		}
		script += `echo pid $!; wait`
		cmd := exec.Command(setpriv, "--reuid", strconv.Itoa(uid), "--regid", strconv.Itoa(gid), "--clear-groups", "--",
			unshare, "-Urm", "sh", "-c", script, "sh", mnt, userBin, secretBin)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		t.Cleanup(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		})
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var pid int
			if _, err := fmt.Sscanf(sc.Text(), "pid %d", &pid); err == nil {
				return pid
			}
		}
		t.Fatalf("the user's program did not start: %s", stderr.String())
		return 0
	}

	pid := run(false)
	if _, err := os.Stat(prog); err == nil {
		t.Fatalf("%s exists on the host: the namespace is not in place", prog)
	}
	data := filepath.Join(t.TempDir(), "jitprof.data")
	perftest.Run(t, jitprof, "record", "-q", "-p", strconv.Itoa(pid), "--duration", "1s", "-o", data)
	perfData := filepath.Join(t.TempDir(), "perf.data")
	perftest.Run(t, perf, "record", "-q", "-p", strconv.Itoa(pid), "-o", perfData, "--", "sleep", "1")
	theirs := perftest.Run(t, perf, "report", "-i", perfData, "--stdio", "--sort", "sym")
	if !strings.Contains(theirs, "[.] ns_spin") {
		t.Errorf("perf report does not name the program's function:\n%s", theirs)
	}
	// The recording holds the program's build-id, read in its root.
	id, err := symbolize.FileBuildID(userBin, trust.Unknown)
	if err != nil || id == "" {
		t.Fatalf("the program's build-id: %q, %v", id, err)
	}
	if dump := perftest.Run(t, jitprof, "dump", "--header-only", "-i", data); !strings.Contains(dump, id+" pid -1 "+prog+"\n") {
		t.Errorf("the recording lacks the build-id %s of %s:\n%s", id, prog, dump)
	}
	// Without perf's build-id cache, which perf record filled with a
	// copy of the program: the report reads it in the process's root.
	report := func(f string) string {
		t.Helper()
		cmd := exec.Command(jitprof, "report", "-i", f, "-l")
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "JITPROF_CACHE_DIR=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("jitprof report -i %s: %v\n%s", f, err, out)
		}
		return string(out)
	}
	for _, f := range []string{data, perfData} {
		out := report(f)
		if !strings.Contains(out, "[.] ns_spin") {
			t.Errorf("jitprof report of %s does not name the program's function:\n%s", filepath.Base(f), out)
		}
	}

	pid = run(true)
	// The attack is in place: the program's path, as it sees it, is the
	// root-only program.
	secret, _ := os.ReadFile(secretBin)
	inside := fmt.Sprintf("/proc/%d/root%s", pid, prog)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(inside); err == nil && bytes.Equal(b, secret) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bind mount is not in place at %s", inside)
		}
	}
	data = filepath.Join(t.TempDir(), "attack.data")
	perftest.Run(t, jitprof, "record", "-q", "-p", strconv.Itoa(pid), "--duration", "1s", "-o", data)
	out := report(data)
	if strings.Contains(out, "secret_fn") {
		t.Errorf("a root-only program mounted at the user's path was read:\n%s", out)
	}
}
