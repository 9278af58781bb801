package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/perftest"
)

// needRoot skips a test that needs root, saying why; CI runs as root, so
// there it fails instead.
func needRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("this test needs root (%s), which CI has", why)
	}
	t.Skipf("needs root: %s", why)
}

// testUserName is the unprivileged user the trust tests run JITs as.
const testUserName = "jitprof-user"

// testUser returns the uid and gid of testUserName, creating the user if
// it is missing (useradd, from Debian's passwd, which scripts/setup.sh
// installs).
func testUser(t *testing.T) (uid, gid int) {
	t.Helper()
	u, err := user.Lookup(testUserName)
	if err != nil {
		useradd := "/usr/sbin/useradd" // not on every user's PATH
		if _, err := os.Stat(useradd); err != nil {
			useradd = perftest.Need(t, "useradd")
		}
		out, err := exec.Command(useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", testUserName).CombinedOutput()
		// Status 9: another test binary created it meanwhile.
		if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 9) {
			t.Fatalf("useradd %s: %v\n%s", testUserName, err, out)
		}
		if u, err = user.Lookup(testUserName); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// startJIT starts cmd, which runs perftest.AnonJIT, and returns the JIT's
// pid once it runs its code; the test's end kills it.
func startJIT(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		var pid int
		if _, err := fmt.Sscanf(line, "ready %d", &pid); err != nil {
			t.Fatalf("the JIT did not start: %q\n%s", line, stderr.String())
		}
		return pid
	case <-time.After(30 * time.Second):
		t.Fatalf("the JIT did not start in 30 s\n%s", stderr.String())
	}
	return 0
}

// runBoth runs jitprof or perf and returns its stdout and stderr, failing the
// test when it fails.
func runBoth(t *testing.T, name string, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, e.String())
	}
	return o.String(), e.String()
}

// TestNamespaceAttack is the attack a user mounts on a profiler root
// runs: in a user and mount namespace of their own, they bind-mount a
// root-only file over /tmp/perf-$$.map and run a JIT. Root's jitprof
// record -p, jitprof report of that recording and of a perf recording,
// made while the JIT runs, must refuse the map (owned by root, not by the
// JIT's user) and show no byte of the secret in the perf.data, on
// standard output or on standard error.
func TestNamespaceAttack(t *testing.T) {
	needRoot(t, "the attack is on a profiler run as root, by another user")
	perf := perftest.Perf(t)
	setpriv, unshare := perftest.Need(t, "setpriv"), perftest.Need(t, "unshare")
	uid, gid := testUser(t)
	jit := perftest.AnonJIT(t)
	jitprof := buildJitprof(t, t.TempDir())

	var raw [16]byte
	rand.Read(raw[:])
	marker := "M" + hex.EncodeToString(raw[:])
	// The marker leads, as a shadow file's first user does: the perf map
	// parser's first token.
	secretBody := marker + ":$6$" + marker + ":19000:0:99999:7:::\n" + strings.Repeat("daemon:*:"+marker+":0:99999:7:::\n", 20)
	secret, err := os.CreateTemp("", "jitprof-secret-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(secret.Name()) })
	if _, err := secret.WriteString(secretBody); err != nil {
		t.Fatal(err)
	}
	secret.Close()
	if err := os.Chmod(secret.Name(), 0o600); err != nil {
		t.Fatal(err)
	}

	attack := exec.Command(setpriv, "--reuid", strconv.Itoa(uid), "--regid", strconv.Itoa(gid), "--clear-groups", "--",
		unshare, "-Urm", "sh", "-c", `touch /tmp/perf-$$.map && mount --bind "$0" /tmp/perf-$$.map && exec "$1" 60`, secret.Name(), jit)
	pid := startJIT(t, attack)
	hostMap := fmt.Sprintf("/tmp/perf-%d.map", pid)
	t.Cleanup(func() { os.Remove(hostMap) })
	// The attack is in place: the JIT's map is the secret, owned by root.
	inside := fmt.Sprintf("/proc/%d/root%s", pid, hostMap)
	if b, err := os.ReadFile(inside); err != nil || string(b) != secretBody {
		t.Fatalf("the bind mount is not in place: %s reads %d bytes, %v", inside, len(b), err)
	}

	dir := t.TempDir()
	var said []string
	check := func(what, text string) {
		t.Helper()
		for _, part := range []string{marker, marker[:12], marker[len(marker)-12:]} {
			if strings.Contains(text, part) {
				t.Errorf("%s holds the secret", what)
			}
		}
		said = append(said, text)
	}
	refusal := "refusing " + inside + ": owned by uid 0, not by uid " + strconv.Itoa(uid)

	data := filepath.Join(dir, "jitprof.data")
	_, errOut := runBoth(t, jitprof, "record", "-p", strconv.Itoa(pid), "--duration", "1s", "-o", data)
	check("jitprof record's stderr", errOut)
	if !strings.Contains(errOut, refusal) {
		t.Errorf("jitprof record does not say it refused the map:\n%s", errOut)
	}
	perfData := filepath.Join(dir, "perf.data")
	runBoth(t, perf, "record", "-q", "-p", strconv.Itoa(pid), "-o", perfData, "--", "sleep", "1")
	for _, f := range []string{data, perfData} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		check(f, string(b))
		out, errOut := runBoth(t, jitprof, "report", "-i", f, "--anon-samples", "-l")
		check("jitprof report's stdout", out)
		check("jitprof report's stderr", errOut)
		if !strings.Contains(errOut, refusal) {
			t.Errorf("jitprof report of %s does not say it refused the map:\n%s", filepath.Base(f), errOut)
		}
		if !strings.Contains(out, fmt.Sprintf("anon (tgid:%d", pid)) {
			t.Errorf("jitprof report of %s has no anonymous samples of the JIT:\n%s", filepath.Base(f), out)
		}
		// --force reads the file, but still quotes none of it.
		out, errOut = runBoth(t, jitprof, "report", "-i", f, "--anon-samples", "-l", "--force")
		check("jitprof report --force's stdout", out)
		check("jitprof report --force's stderr", errOut)
	}
	if t.Failed() {
		t.Logf("what jitprof said:\n%s", strings.Join(said, "\n"))
	}
}

// TestSuRecordedOwner: a JIT started through su has exited, and su's child
// was root when it was forked, by the time jitprof record embeds its
// perf map; the map is its user's, and the recorder judges it by the uid
// the JIT ran as.
func TestSuRecordedOwner(t *testing.T) {
	needRoot(t, "su to another user")
	perftest.Perf(t)
	su := perftest.Need(t, "su")
	uid, gid := testUser(t)
	jit := perftest.AnonJIT(t)
	jitprof := buildJitprof(t, t.TempDir())
	data := filepath.Join(t.TempDir(), "su.data")
	cmd := exec.Command(jitprof, "record", "-o", data, "--", su, "-s", "/bin/sh", testUserName, "-c", jit+" 1 map")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("jitprof record -- su: %v\n%s", err, stderr.String())
	}
	var pid int
	if _, err := fmt.Sscanf(stdout.String(), "ready %d", &pid); err != nil {
		t.Fatalf("the JIT did not run: %q\n%s", stdout.String(), stderr.String())
	}
	// The report must use the copy in the recording.
	mapPath := fmt.Sprintf("/tmp/perf-%d.map", pid)
	var st syscall.Stat_t
	if err := syscall.Stat(mapPath, &st); err != nil || int(st.Uid) != uid {
		t.Fatalf("the JIT's map %s: uid %d, %v; want the user's, %d", mapPath, st.Uid, err, uid)
	}
	os.Remove(mapPath)
	if strings.Contains(stderr.String(), "refusing") {
		t.Errorf("jitprof record refused the JIT's own map:\n%s", stderr.String())
	}
	out, errOut := runBoth(t, jitprof, "report", "-i", data, "--anon-samples", "-l")
	if !strings.Contains(out, "jit_spin") || !strings.Contains(errOut, "(embedded in the recording)") {
		t.Errorf("the report does not name jit_spin from the embedded map:\n%s\n%s", out, errOut)
	}
	dump, _ := runBoth(t, jitprof, "dump", "--header-only", "-i", data)
	if want := fmt.Sprintf("process %d: nspid %d uid %d gid %d ", pid, pid, uid, gid); !strings.Contains(dump, want) {
		t.Errorf("the recording does not say %q:\n%s", want, dump)
	}
}

// secretSource is a user's CPU-bound program whose debug info names a
// root-only file as its source: #line makes its DWARF say that its code
// comes from lines 2 to 5 of SECRET. Argument: ms of CPU time to spin,
// so that annotate has samples in spin on a machine of any speed (spin's
// bound is volatile: with a constant one the compiler called the pure
// spin once, 2 ms of work, and a loaded run could sample none of it).
const secretSource = `#include <stdlib.h>
#include <time.h>
#line 2 "SECRET"
static volatile double sink; static volatile long step = 1000000;
__attribute__((noinline)) double spin(long n) { double s = 0; for (long i = 0; i < n; i++) s += i * 0.5; return s; }
static double cpu_ms(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
int main(int argc, char **argv) { double end = cpu_ms() + (argc > 1 ? atof(argv[1]) : 1); do sink += spin(step); while (cpu_ms() < end); return 0; }
`

// TestUserSourceAttack is the attack of a user on root's annotate: their
// program's DWARF names a root-only file, like /etc/shadow, as its source.
// Root records the program as it runs as that user and annotates it: the
// report names the file and line, as it would any source, and shows none
// of its text. The same program of root's shows root's file, so the test
// can tell.
func TestUserSourceAttack(t *testing.T) {
	needRoot(t, "the attack is on a profiler run as root, by another user")
	perftest.Perf(t)
	setpriv := perftest.Need(t, "setpriv")
	gcc := perftest.Need(t, "gcc")
	uid, gid := testUser(t)
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(dir, "shadow")
	var text strings.Builder
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&text, "root:SECRET-LINE-%d:19000:0:99999:7:::\n", i)
	}
	if err := os.WriteFile(secret, []byte(text.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "spin.c")
	if err := os.WriteFile(src, []byte(strings.Replace(secretSource, "SECRET", secret, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	jitprof := buildJitprof(t, dir)
	annotate := func(owner int, asUser bool) string {
		t.Helper()
		bin := filepath.Join(t.TempDir(), "spin")
		perftest.Run(t, gcc, "-O1", "-g", "-o", bin, src)
		for _, d := range []string{filepath.Dir(filepath.Dir(bin)), filepath.Dir(bin)} {
			os.Chmod(d, 0o755)
		}
		if err := os.Chown(bin, owner, owner); err != nil {
			t.Fatal(err)
		}
		data := filepath.Join(dir, "spin.data")
		args := []string{"record", "-q", "-o", data, "--"}
		if asUser {
			args = append(args, setpriv, fmt.Sprintf("--reuid=%d", uid), fmt.Sprintf("--regid=%d", gid), "--clear-groups")
		}
		runBoth(t, jitprof, append(args, bin, "300")...)
		out, errOut := runBoth(t, jitprof, "annotate", "-i", data, "spin")
		return out + errOut
	}
	if out := annotate(uid, true); strings.Contains(out, "SECRET-LINE") || !strings.Contains(out, secret+":") {
		t.Errorf("root's annotate of a user's program whose debug info names a root-only file: want the file named, none of its lines:\n%s", out)
	}
	if out := annotate(0, false); !strings.Contains(out, "SECRET-LINE") {
		t.Errorf("root's annotate of root's own program: want the source lines:\n%s", out)
	}
}

// TestRecordingOwner: as perf does, report refuses a recording owned by
// neither the user running it nor root, unless --force.
func TestRecordingOwner(t *testing.T) {
	needRoot(t, "a file owned by another user")
	uid, gid := testUser(t)
	data := jitData(t)
	if err := os.Chown(data, uid, gid); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := run([]string{"report", "-i", data}, &stderr); code == 0 || !strings.Contains(stderr.String(), fmt.Sprintf("owned by uid %d, neither by the user running jitprof (uid 0) nor by root", uid)) {
		t.Errorf("report of another user's recording: exit %d, %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"report", "--force", "-o", filepath.Join(t.TempDir(), "report"), "-i", data}, &stderr); code != 0 {
		t.Errorf("report --force of another user's recording: exit %d, %s", code, stderr.String())
	}
}
