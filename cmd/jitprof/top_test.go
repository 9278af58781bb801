package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/perftest"
)

// topRow is a row of jitprof top --stdio.
type topRow struct {
	percent float64
	samples uint64
	dso     string
	sym     string
}

var topRowRe = regexp.MustCompile(`^\s+(\d+\.\d+)%\s+(\d+)\s+(.*?)\s+(\[[.k]\] .*)$`)

// topRefreshes splits jitprof top --stdio's output into its refreshes:
// each a header and rows (sort keys dso,sym).
func topRefreshes(out string) (headers []string, refreshes [][]topRow) {
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "# jitprof top:"):
			headers = append(headers, line)
			refreshes = append(refreshes, nil)
		case len(refreshes) > 0:
			if m := topRowRe.FindStringSubmatch(line); m != nil {
				pc, _ := strconv.ParseFloat(m[1], 64)
				n, _ := strconv.ParseUint(m[2], 10, 64)
				refreshes[len(refreshes)-1] = append(refreshes[len(refreshes)-1], topRow{pc, n, m[3], m[4]})
			}
		}
	}
	return headers, refreshes
}

// TestTopJIT: jitprof top runs minijit, whose generations at one address
// come and go while it runs, numbered otherwise than by default
// (-prelude). With -z each refresh shows its interval's samples: summed
// over the refreshes, every generation has the share minijit measured
// for it, as a report of a recording does (checkGenerations' 4 points):
// JIT data read while the JIT runs names each sample by the code that
// ran then, not by what was there when the data was read.
func TestTopJIT(t *testing.T) {
	perftest.Perf(t)
	jitprof, minijit := buildTools(t)
	dir := t.TempDir()
	truthPath := filepath.Join(dir, "truth.json")
	cmd := exec.Command(jitprof, "top", "--stdio", "-z", "-d", "0.5", "--", minijit, "-duration", "2s", "-quiet", "-prelude", "2", "-truth", truthPath)
	cmd.Env = append(os.Environ(), "JITPROF_JITLOG_DIR="+filepath.Join(dir, "jitlog"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jitprof top: %v\n%s", err, stderr.String())
	}
	_, truth := readTruth(t, truthPath)
	headers, refreshes := topRefreshes(string(out))
	if len(refreshes) < 4 || !strings.Contains(headers[len(headers)-1], "sampling ended") {
		t.Fatalf("%d refreshes, the last %q; want several, the last after minijit ended:\n%s", len(refreshes), headers[len(headers)-1], out)
	}
	sampled := map[string]float64{}
	var jit float64
	for _, rows := range refreshes {
		for _, r := range rows {
			if r.dso == "[JIT jitlog] minijit" {
				name := strings.TrimPrefix(r.sym, "[.] ")
				sampled[name] += float64(r.samples)
				jit += float64(r.samples)
			}
		}
	}
	for name, want := range truth {
		got := 100 * sampled[name] / max(jit, 1)
		if math.Abs(got-want) > 4 {
			t.Errorf("%s: %.1f%% of the JIT samples in top, %.1f%% of minijit's JIT time", name, got, want)
		}
	}
	for name := range sampled {
		if _, ok := truth[name]; !ok {
			t.Errorf("top names %q, which minijit did not generate (%v)", name, truth)
		}
	}
}

// TestTopFollows: jitprof top of every CPU names the JIT code of a
// process that starts after it; a perf map it reads again as it grows
// names code added later. SIGINT ends it with status 0.
func TestTopFollows(t *testing.T) {
	perftest.Perf(t)
	if os.Geteuid() != 0 {
		t.Skip("every CPU needs root")
	}
	jitprof, minijit := buildTools(t)
	dir := t.TempDir()
	env := append(os.Environ(), "JITPROF_JITLOG_DIR="+filepath.Join(dir, "jitlog"))
	cmd := exec.Command(jitprof, "top", "--stdio", "-z", "-d", "0.5", "-a", "--comms", "minijit")
	cmd.Env = env // where minijit's jitlog is
	var stdout syncBuffer
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s in a minute:\n%s\n%s", what, stdout.String(), stderr.String())
			}
		}
	}
	eventually("refresh", func() bool { return strings.Contains(stdout.String(), "# jitprof top:") })
	mj := exec.Command(minijit, "-duration", "2s", "-quiet", "-perfmap")
	mj.Env = env
	out, err := mj.CombinedOutput()
	removeAfter(t, fmt.Sprintf("/tmp/perf-%d.map", mj.Process.Pid))
	if err != nil {
		t.Fatalf("minijit: %v\n%s", err, out)
	}
	eventually("xorshift, generated last", func() bool { return strings.Contains(stdout.String(), "xorshift [gen 6]") })
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	stopped = true
	if err != nil {
		t.Errorf("jitprof top after SIGINT: %v\n%s", err, stderr.String())
	}
	_, refreshes := topRefreshes(stdout.String())
	named := map[string]bool{}
	for _, rows := range refreshes {
		for _, r := range rows {
			if strings.HasPrefix(r.dso, "[JIT ") {
				named[strings.TrimPrefix(r.sym, "[.] ")] = true
			}
		}
	}
	for _, want := range []string{"fib [gen 1]", "collatz [gen 3]", "fib [gen 5]", "xorshift [gen 6]"} {
		if !named[want] {
			t.Errorf("top of every CPU did not name %s of the minijit started after it: %v", want, named)
		}
	}

	// The perf map alone: read again as it grows, it names what was
	// added to it while top ran (the slots minijit re-used are
	// ambiguous, as a map has no times, and say so).
	truth := filepath.Join(dir, "truth.json")
	cmd = exec.Command(jitprof, "top", "--stdio", "-z", "-d", "0.5", "--anon-handler", "perfmap", "--", minijit, "-duration", "2s", "-quiet", "-perfmap", "-truth", truth)
	cmd.Env = append(os.Environ(), "JITPROF_JITLOG_DIR="+filepath.Join(dir, "jitlog2"))
	out, err = cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := readTruth(t, truth)
	removeAfter(t, fmt.Sprintf("/tmp/perf-%d.map", pid))
	if !strings.Contains(string(out), "[JIT perfmap] minijit") || !strings.Contains(string(out), "xorshift") {
		t.Errorf("top with the perf map names no xorshift, added last:\n%s", out)
	}
}

// TestTopUnprivileged: for a user other than root, jitprof top samples
// their own processes, user space only, and says so.
func TestTopUnprivileged(t *testing.T) {
	perftest.Perf(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to run jitprof as nobody")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	dir, err := os.MkdirTemp("", "jitprof-nobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	bin := buildJitprof(t, dir)
	busy := filepath.Join(dir, "busy")
	copyFile(t, perftest.Busy(t), busy)
	as := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	// The user's workload, running before top starts.
	work := exec.Command(busy, "3000")
	work.SysProcAttr = as
	if err := work.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { work.Process.Kill(); work.Wait() })
	// Until it execs, the child is the test's, root's: top started before
	// then would not count it among the user's processes.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", work.Process.Pid)); exe == busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the user's busy did not exec in 30 s")
		}
	}
	cmd := exec.Command(bin, "top", "--stdio", "-d", "0.5")
	cmd.Dir, cmd.SysProcAttr = dir, as
	var stdout syncBuffer
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Until the user's work shows (on a loaded machine the first
	// refreshes can come before any sample), and a few refreshes more.
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		out := stdout.String()
		if i := strings.Index(out, "work_"); i >= 0 && strings.Count(out[i:], "# jitprof top:") >= 2 {
			break
		}
	}
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Errorf("jitprof top as nobody: %v\n%s", err, stderr.String())
	}
	headers, refreshes := topRefreshes(stdout.String())
	if len(headers) < 2 || !strings.Contains(headers[0], "not root: your") || !strings.Contains(headers[0], "user space only") {
		t.Fatalf("as nobody, the header does not say what is sampled:\n%s\n%s", stdout.String(), stderr.String())
	}
	work2 := false
	for _, rows := range refreshes {
		for _, r := range rows {
			if strings.HasPrefix(r.sym, "[k]") {
				t.Errorf("a kernel row as nobody: %+v", r)
			}
			work2 = work2 || strings.Contains(r.sym, "work_")
		}
	}
	if !work2 {
		t.Errorf("as nobody, top shows no work of the user's busy:\n%s", stdout.String())
	}
}

// TestTopTerminal drives the terminal UI in tmux, as a user in a plain
// terminal (TERM=xterm, over SSH as well): the rows name the JIT code;
// j, t, Enter (annotate), p and h do what they say; q and SIGTERM give
// the terminal back as it was (stty -g before and after, the shell's
// prompt on the screen again).
func TestTopTerminal(t *testing.T) {
	perftest.Perf(t)
	tmux := perftest.Need(t, "tmux")
	jitprof, minijit := buildTools(t)
	dir := t.TempDir()
	session := fmt.Sprintf("jitprof-top-%d", os.Getpid())
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("new-session", "-d", "-s", session, "-x", "150", "-y", "40", "env", "TERM=xterm", "JITPROF_JITLOG_DIR="+filepath.Join(dir, "jitlog"), "PS1=$ ", "sh")
	t.Cleanup(func() { exec.Command(tmux, "kill-session", "-t", session).Run() })
	screen := func() string { return run("capture-pane", "-p", "-t", session) }
	waitFor := func(what string) string {
		t.Helper()
		var s string
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if s = screen(); strings.Contains(s, what) {
				return s
			}
		}
		t.Fatalf("no %q on the screen in a minute:\n%s", what, s)
		return ""
	}
	keys := func(k ...string) { run(append([]string{"send-keys", "-t", session}, k...)...) }
	before, after := filepath.Join(dir, "stty.before"), filepath.Join(dir, "stty.after")
	start := func() {
		os.Remove(after)
		keys(fmt.Sprintf("clear; stty -g > %s; %s top -d 0.5 -- %s -duration 1m -quiet; echo EXIT=$?; stty -g > %s", before, jitprof, minijit, after), "Enter")
	}
	restored := func(how string) {
		t.Helper()
		s := waitFor("EXIT=0")
		if strings.Contains(s, "q quit") {
			t.Errorf("after %s the UI is still on the screen:\n%s", how, s)
		}
		b1, _ := os.ReadFile(before)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if b2, err := os.ReadFile(after); err == nil && len(b2) > 0 {
				if !bytes.Equal(b1, b2) {
					t.Errorf("after %s the terminal's settings are %q, were %q", how, b2, b1)
				}
				return
			}
		}
		t.Errorf("after %s: no stty -g", how)
	}

	start()
	waitFor("[JIT jitlog] minijit")
	keys("j")
	waitFor("JIT code only")
	keys("j", "j", "t")
	waitFor("zoomed into pid")
	keys("Escape")
	waitFor("all processes")
	keys("Enter")
	waitFor("Disassembly of JIT code")
	// An Escape and a key at once read as Alt and the key.
	keys("Escape")
	waitFor("Shared Object")
	keys("p")
	waitFor("[paused]")
	keys("h")
	waitFor("zoom into the selected row's process")
	keys("Escape")
	waitFor("Shared Object")
	keys("q")
	restored("q")

	// -g: the children column, and c shows the selected row's tree.
	keys(fmt.Sprintf("clear; stty -g > %s; %s top -g -s sym -d 0.5 -- %s 60000; echo EXIT=$?; stty -g > %s", before, jitprof, perftest.Calls(t), after), "Enter")
	waitFor("[.] spin")
	if s := screen(); !strings.Contains(s, "Children      Self") {
		t.Errorf("top -g without a children column:\n%s", s)
	}
	keys("c")
	waitFor("Callchains of")
	if s := waitFor("call_a"); !strings.Contains(s, "call_b") {
		t.Errorf("the top row's tree lacks call_b:\n%s", s)
	}
	keys("q", "q")
	restored("q after -g")

	start()
	waitFor("[JIT jitlog] minijit")
	pane := strings.TrimSpace(run("list-panes", "-t", session, "-F", "#{pane_pid}"))
	pid := 0
	children, _ := os.ReadFile("/proc/" + pane + "/task/" + pane + "/children")
	for _, c := range strings.Fields(string(children)) {
		if comm, _ := os.ReadFile("/proc/" + c + "/comm"); strings.TrimSpace(string(comm)) == "jitprof-top" {
			pid, _ = strconv.Atoi(c)
		}
	}
	if pid == 0 {
		t.Fatalf("no jitprof-top under the shell (pid %s, children %q)", pane, children)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	restored("SIGTERM")
}

// graphRowRe is a row of report -g's text (and top -g's plain report):
// children, self, samples, symbol.
var graphRowRe = regexp.MustCompile(`^\s+(\d+\.\d+)%\s+(\d+\.\d+)%\s+(\d+)\s+(\[[.k]\] .+)$`)

// graphRows reads the rows of a report -g -s sym and its samples.
func graphRows(t *testing.T, out string) (rows map[string][2]float64, samples float64) {
	t.Helper()
	rows = map[string][2]float64{}
	for _, line := range strings.Split(out, "\n") {
		if m := graphRowRe.FindStringSubmatch(line); m != nil {
			children, _ := strconv.ParseFloat(m[1], 64)
			self, _ := strconv.ParseFloat(m[2], 64)
			rows[m[4]] = [2]float64{children, self}
		}
		if _, rest, ok := strings.Cut(line, "# event: "); ok {
			if _, n, ok := strings.Cut(rest, "): "); ok {
				samples, _ = strconv.ParseFloat(strings.Fields(n)[0], 64)
			}
		}
	}
	return rows, samples
}

// TestTopCallGraph: jitprof top -g's plain report has the rows of
// jitprof report -g of the same samples: top runs jitprof record -g of
// the calls workload (main calls call_a three times for each call_b,
// both spin), so both sample the same run, each with its own event, and
// top shows only the workload's (--comms). Its refresh is longer than
// the run, so its one report holds every sample, undecayed. 4 s of the
// workload's CPU time at 4 kHz give each some 16,000 samples; the
// children and self shares of every row of 1% or more agree within 4
// standard deviations of the difference of two such samplings,
// 4·sqrt(p(1-p)(1/n1+1/n2)): 1.9 points at call_a's 75%.
func TestTopCallGraph(t *testing.T) {
	perftest.Perf(t)
	jitprof, _ := buildTools(t)
	calls := perftest.Calls(t)
	data := filepath.Join(t.TempDir(), "perf.data")
	cmd := exec.Command(jitprof, "top", "--stdio", "-g", "-s", "sym", "-d", "10000", "--comms", "calls", "--",
		jitprof, "record", "-q", "-g", "-o", data, "--", calls, "4000")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jitprof top: %v\n%s", err, stderr.String())
	}
	refreshes := strings.Split(string(out), "# jitprof top:")
	last := refreshes[len(refreshes)-1]
	if len(refreshes) != 2 || !strings.Contains(last, "sampling ended") {
		t.Fatalf("%d refreshes; want one, after the run:\n%s", len(refreshes)-1, out)
	}
	top, n1 := graphRows(t, last)
	rep, n2 := graphRows(t, jpReport(t, jitprof, nil, "-i", data, "-g", "-s", "sym"))
	if n1 < 8000 || n2 < 8000 {
		t.Fatalf("%.0f samples in top, %.0f in the recording; want some 16,000 each", n1, n2)
	}
	for _, sym := range []string{"[.] main", "[.] call_a", "[.] call_b", "[.] spin"} {
		if top[sym][0] < 20 || rep[sym][0] < 20 {
			t.Errorf("%s: children %.2f%% in top, %.2f%% in the report; want a fifth or more", sym, top[sym][0], rep[sym][0])
		}
	}
	worst := 0.0
	for _, c := range []struct {
		a, b map[string][2]float64
		in   string
	}{{top, rep, "the report"}, {rep, top, "top"}} {
		for sym, a := range c.a {
			b, ok := c.b[sym]
			for i, col := range []string{"children", "self"} {
				if a[i] < 1 && b[i] < 1 {
					continue
				}
				if !ok {
					t.Errorf("%s: %s %.2f%%, and no row in %s", sym, col, a[i], c.in)
					continue
				}
				p := (a[i] + b[i]) / 200
				tol := 400*math.Sqrt(p*(1-p)*(1/n1+1/n2)) + 0.01
				if d := math.Abs(a[i] - b[i]); d > tol {
					t.Errorf("%s: %s %.2f%%, %.2f%% in %s; want within %.2f points", sym, col, a[i], b[i], c.in, tol)
				}
				worst = max(worst, math.Abs(a[i]-b[i])/tol)
			}
		}
	}
	t.Logf("%.0f samples in top, %.0f in the recording; call_a's children %.2f%% and %.2f%%; the worst row at %.2f of its tolerance",
		n1, n2, top["[.] call_a"][0], rep["[.] call_a"][0], worst)
}
