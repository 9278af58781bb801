package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

// whoamiHandler is an external handler that answers a claim with its own
// credentials, as /proc says them, in its error message.
const whoamiHandler = `#!/bin/sh
read -r line
echo "error creds $(grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/$$/status | tr -s '\t\n' '  ')end"
`

// recordJIT records perftest.AnonJIT with its perf map, run as uid and
// gid (or as root when uid is 0), and returns the recording, the JIT's
// pid and the address of its code.
func recordJIT(t *testing.T, jitprof string, uid, gid int) (data string, pid int, addr uint64) {
	t.Helper()
	jit := perftest.AnonJIT(t)
	data = filepath.Join(t.TempDir(), "perf.data")
	args := []string{"record", "-q", "-o", data, "--"}
	if uid != 0 {
		args = append(args, perftest.Need(t, "setpriv"), "--reuid", strconv.Itoa(uid), "--regid", strconv.Itoa(gid), "--clear-groups", "--")
	}
	var stderr strings.Builder
	cmd := exec.Command(jitprof, append(args, jit, "1", "map")...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jitprof record: %v\n%s%s", err, out, stderr.String())
	}
	for sc := bufio.NewScanner(strings.NewReader(string(out))); sc.Scan(); {
		if _, err := fmt.Sscanf(sc.Text(), "ready %d %v", &pid, &addr); err == nil {
			break
		}
	}
	if pid == 0 {
		t.Fatalf("the JIT did not say where its code is: %q", out)
	}
	t.Cleanup(func() { os.Remove(fmt.Sprintf("/tmp/perf-%d.map", pid)) })
	return data, pid, addr
}

// TestHandlersUnprivileged: root's report runs an external handler, and
// the host of a handler library, as the recorded process's user and
// group, without supplementary groups or capabilities and with
// no_new_privs, however its user it is (root's own process too); and the
// shipped examples, which read /tmp/jitsyms-PID.txt, do not follow the
// symlink to a root-only file that a user plants there, nor read a file
// of another owner than the process's, and still read the JIT's own.
func TestHandlersUnprivileged(t *testing.T) {
	needRoot(t, "handlers are run by root's jitprof, as the recorded process's user")
	perftest.Perf(t)
	gcc := perftest.Need(t, "gcc")
	uid, gid := testUser(t)
	jitprof := buildJitprof(t, t.TempDir())
	bin := filepath.Dir(jitprof)
	os.Chmod(bin, 0o755)
	if err := os.WriteFile(filepath.Join(bin, "jitprof-anon-whoami"), []byte(whoamiHandler), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "jitprof-anon-example"), "../../examples/anonhandler").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if out, err := exec.Command(perftest.Need(t, "make"), "-s", "-C", "../../agent", "OUT="+bin, bin+"/jitprof-anon-host").CombinedOutput(); err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	libs := t.TempDir()
	perftest.Run(t, gcc, "-shared", "-fPIC", "-I../../agent", "-o", filepath.Join(libs, "libjitprof-anon-exso.so"), "../../examples/anonhandler-so/example.c")
	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "JITPROF_ANON_PATH="+libs)
	report := func(data string, args ...string) string {
		t.Helper()
		cmd := exec.Command(jitprof, append([]string{"report", "-i", data, "--anon-samples", "-l"}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("jitprof report %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	// Who the handler runs as: the user's process, root's process.
	for _, who := range []struct {
		name     string
		uid, gid int
	}{{"the user's", uid, gid}, {"root's", 0, 0}} {
		data, _, _ := recordJIT(t, jitprof, who.uid, who.gid)
		out := report(data, "--anon-handler", "whoami")
		i := strings.Index(out, "creds ")
		if i < 0 {
			t.Fatalf("%s process: the handler did not say who it is:\n%s", who.name, out)
		}
		creds := out[i : i+strings.Index(out[i:], "end")]
		ids := func(n int) string { return strings.Repeat(" "+strconv.Itoa(n), 4) }
		for _, want := range []string{
			"Uid:" + ids(who.uid) + " ", "Gid:" + ids(who.gid) + " ", "Groups: Cap",
			"CapInh: 0000000000000000", "CapPrm: 0000000000000000", "CapEff: 0000000000000000",
			"CapBnd: 0000000000000000", "CapAmb: 0000000000000000", "NoNewPrivs: 1",
		} {
			if !strings.Contains(creds, want) {
				t.Errorf("%s process: the handler runs with %q, want %q", who.name, creds, want)
			}
		}
	}

	// The examples, on the user's JIT.
	const body = "root's secret\n"
	secret := rootFile(t, body)
	data, pid, addr := recordJIT(t, jitprof, uid, gid)
	syms := fmt.Sprintf("/tmp/jitsyms-%d.txt", pid)
	t.Cleanup(func() { os.Remove(syms) })
	if err := os.WriteFile(secret, fmt.Appendf(nil, "ROOT_SECRET %x 9\n", addr), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, handler := range []string{"example", "exso"} {
		os.Remove(syms)
		plant(t, secret, syms, uid, gid)
		if out := report(data, "--anon-handler", handler); strings.Contains(out, "ROOT_SECRET") || !strings.Contains(out, "refusing "+syms+": a symlink") {
			t.Errorf("%s: a symlink to a root-only file: want it refused, its line unread:\n%s", handler, jitLines(out))
		}
		// Another owner's file (root's, where root can write /tmp).
		os.Remove(syms)
		os.WriteFile(syms, fmt.Appendf(nil, "ROOT_FILE %x 9\n", addr), 0o644)
		if out := report(data, "--anon-handler", handler); strings.Contains(out, "ROOT_FILE") || !strings.Contains(out, "refusing "+syms+": ") {
			t.Errorf("%s: a file that is not the process's user's: want it refused, its line unread:\n%s", handler, jitLines(out))
		}
		// The JIT's own file.
		os.Chown(syms, uid, gid)
		if out := report(data, "--anon-handler", handler); !strings.Contains(out, "ROOT_FILE") {
			t.Errorf("%s: the JIT's own file did not name its code:\n%s", handler, jitLines(out))
		}
	}
}

// jitLines are the lines of a report about JIT code and its handlers.
func jitLines(out string) string {
	var l []string
	for line := range strings.Lines(out) {
		if strings.Contains(line, "JIT") || strings.Contains(line, "anon") || strings.Contains(line, "refusing") {
			l = append(l, line)
		}
	}
	return strings.Join(l, "")
}

// TestCodeLookup: jitprof-web and the host of handler libraries are
// found as a shell finds a command, on PATH, but a candidate refused for
// the checks on code (another user's, or writable by others) is passed
// over for the next, as a shell passes over one it cannot execute.
func TestCodeLookup(t *testing.T) {
	needRoot(t, "a candidate owned by another user")
	perftest.Perf(t)
	gcc := perftest.Need(t, "gcc")
	uid, gid := testUser(t)
	built := buildJitprof(t, t.TempDir())
	host := filepath.Join(filepath.Dir(built), "jitprof-anon-host")
	if out, err := exec.Command(perftest.Need(t, "make"), "-s", "-C", "../../agent", "OUT="+filepath.Dir(built), host).CombinedOutput(); err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	// jitprof alone: jitprof-web and the host are found on PATH only.
	b, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	jitprof := filepath.Join(t.TempDir(), "jitprof")
	if err := os.WriteFile(jitprof, b, 0o755); err != nil {
		t.Fatal(err)
	}
	var path []string
	for _, bad := range []string{"writable", "theirs", "good"} {
		dir := t.TempDir()
		for _, name := range []string{"jitprof-web", "jitprof-anon-host"} {
			b, err := os.ReadFile(filepath.Join(filepath.Dir(built), name))
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, b, 0o755); err != nil {
				t.Fatal(err)
			}
			switch bad {
			case "writable":
				os.Chmod(p, 0o777)
			case "theirs":
				os.Chown(p, uid, gid)
			}
		}
		path = append(path, dir)
	}
	env := append(os.Environ(), "PATH="+strings.Join(path, ":")+":/usr/bin:/bin")

	cmd := exec.Command(jitprof, "web", "-h")
	cmd.Env = env
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "usage: jitprof web") || strings.Contains(string(out), "refusing") {
		t.Errorf("jitprof web with refused candidates first on PATH:\n%s", out)
	}

	libs := t.TempDir()
	perftest.Run(t, gcc, "-shared", "-fPIC", "-I../../agent", "-o", filepath.Join(libs, "libjitprof-anon-exso.so"), "../../examples/anonhandler-so/example.c")
	data, pid, addr := recordJIT(t, built, 0, 0)
	syms := fmt.Sprintf("/tmp/jitsyms-%d.txt", pid)
	os.WriteFile(syms, fmt.Appendf(nil, "found_by_the_host %x 9\n", addr), 0o644)
	t.Cleanup(func() { os.Remove(syms) })
	cmd = exec.Command(jitprof, "report", "-i", data, "--anon-handler", "exso", "-l")
	cmd.Env = append(env, "JITPROF_ANON_PATH="+libs)
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "found_by_the_host") {
		t.Errorf("report with a library, refused hosts first on PATH: %v\n%s", err, jitLines(string(out)))
	}
}
