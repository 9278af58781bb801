package main

import (
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/otelcoltest"
	"github.com/jitprof/jitprof/internal/otlp/otlptest"
	"github.com/jitprof/jitprof/internal/perftest"
)

// waitStatus waits until jitprof daemon status matches re, at most d,
// and returns the status.
func waitStatus(t *testing.T, jitprof, dir string, re *regexp.Regexp, d time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		st := daemonCmd(t, jitprof, dir, "status")
		if re.MatchString(st) {
			return st
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "daemon.log"))
			t.Fatalf("daemon status did not match %q within %v:\n%s\nlog:\n%s", re, d, st, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var (
	pushedRE  = regexp.MustCompile(`otlp push: (\d+) of the (\d+) samples taken put in batches, (\d+) dropped; (\d+) batches sent, (\d+) wait in`)
	successRE = regexp.MustCompile(`otlp success: +\d`)
	emptyRE   = regexp.MustCompile(`otlp queued: +0 batches`)
)

// pushTotals are what the daemon of dir said of its push as it stopped
// last: the samples put in batches, the samples taken, those dropped,
// and the batches left in the spool.
type pushTotals struct{ pushed, taken, dropped, sent, queued int64 }

func readPushTotals(t *testing.T, dir string) pushTotals {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(dir, "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	ms := pushedRE.FindAllStringSubmatch(string(log), -1)
	if len(ms) == 0 {
		t.Fatalf("the daemon's log says nothing of its push:\n%s", log)
	}
	var n [5]int64
	for i := range n {
		n[i], _ = strconv.ParseInt(ms[len(ms)-1][i+1], 10, 64)
	}
	return pushTotals{n[0], n[1], n[2], n[3], n[4]}
}

// TestDaemonPushMinijit: the daemon pushes what it samples to a real
// Collector over OTLP/HTTP every 2 s while minijit runs, and the
// Collector is stopped for 10 s in the middle. Every sample the daemon
// took arrives, none twice; minijit's samples are those its session
// counted, each generation named as report --session names it, with
// its share.
//
// The tolerance: the push and the session count the very same samples
// (the daemon hands each to both), so counting statistics do not enter:
// the shares must agree to rounding, and the half a point is
// checked; the counts are logged. minijit runs 4 s of CPU time at 4 kHz,
// some 16,000 samples, its least generation a few hundred.
func TestDaemonPushMinijit(t *testing.T) {
	perftest.Perf(t)
	needRoot(t, "the daemon samples every CPU")
	jitprof, minijit := buildTools(t)
	buildExporter(t, jitprof)
	col := otelcoltest.Start(t, otelcoltest.Options{})
	dir, jl := filepath.Join(t.TempDir(), "sessions"), t.TempDir()
	env := append(os.Environ(), "JITPROF_JITLOG_DIR="+jl)
	start := time.Now()
	startDaemon(t, jitprof, dir, env, "-a", "-F", "4000", "--separate=thread", "--otlp-endpoint", col.HTTP, "--otlp-interval", "2s")
	truthPath := filepath.Join(t.TempDir(), "truth.json")
	mj := exec.Command(minijit, "-duration", "4s", "-truth", truthPath, "-quiet")
	mj.Env = env
	if err := mj.Start(); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, jitprof, dir, successRE, time.Minute)
	col.Stop()
	down := daemonCmd(t, jitprof, dir, "status")
	time.Sleep(10 * time.Second)
	if !strings.Contains(daemonCmd(t, jitprof, dir, "status"), "otlp error:") {
		t.Errorf("the Collector has been down 10 s, and status says no error:\n%s", daemonCmd(t, jitprof, dir, "status"))
	}
	col.Restart()
	if err := mj.Wait(); err != nil {
		t.Fatalf("minijit: %v", err)
	}
	pid, truth := readTruth(t, truthPath)
	// A push after minijit's end, and the spool empty: everything of
	// minijit's is at the Collector.
	after := time.Now()
	for {
		st := waitStatus(t, jitprof, dir, emptyRE, 2*time.Minute)
		var last time.Time
		if m := regexp.MustCompile(`otlp success: +(\S+)`).FindStringSubmatch(st); m != nil {
			last, _ = time.Parse(time.RFC3339, m[1])
		}
		if last.After(after.Add(time.Second)) {
			break
		}
		time.Sleep(time.Second)
	}
	daemonCmd(t, jitprof, dir, "stop")
	end := time.Now()
	tot := readPushTotals(t, dir)
	if tot.pushed != tot.taken || tot.dropped != 0 || tot.queued != 0 {
		t.Errorf("the daemon took %d samples, put %d in batches, dropped %d, left %d batches unsent", tot.taken, tot.pushed, tot.dropped, tot.queued)
	}
	ss := col.WaitSamples(t, tot.pushed, time.Minute)
	var total int64
	var mine []otlptest.Sample
	for i := range ss {
		total += ss[i].Count()
		if ss[i].Resource["process.pid"] == int64(pid) {
			mine = append(mine, ss[i])
		}
		for _, ts := range ss[i].Times {
			if ts < uint64(start.UnixNano()) || ts > uint64(end.UnixNano()) {
				t.Fatalf("a sample at %v, outside the daemon's run, %v to %v", time.Unix(0, int64(ts)), start, end)
			}
		}
	}
	if total != tot.pushed {
		t.Errorf("the Collector received %d samples; the daemon pushed %d (%d while the Collector was down: %s)", total, tot.pushed, tot.pushed, down)
	}
	if len(mine) == 0 {
		t.Fatalf("no sample of minijit (pid %d) arrived", pid)
	}
	checkSamples(t, "the daemon's push", mine, truth, start, end)

	csv := jpReport(t, jitprof, env, "--session", "--session-dir", dir, "-l", "--format", "csv", "--anon-samples", fmt.Sprintf("tgid:%d", pid))
	want, wantTotal, _ := csvLeaves(t, csv)
	got, gotTotal := leaves(mine)
	if gotTotal != wantTotal {
		t.Errorf("minijit: %d samples pushed, %d in the session", gotTotal, wantTotal)
	}
	for name := range truth {
		k := "[JIT jitlog] minijit|" + name
		gs, ws := 100*float64(got[k])/float64(gotTotal), 100*float64(want[k])/float64(wantTotal)
		t.Logf("%s: %d samples pushed (%.2f%%), %d in the session (%.2f%%)", name, got[k], gs, want[k], ws)
		if want[k] == 0 {
			t.Errorf("%s: no sample in the session", name)
		}
		if math.Abs(gs-ws) > 0.5 {
			t.Errorf("%s: %.2f%% of minijit's samples pushed, %.2f%% in report --session", name, gs, ws)
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok && strings.HasPrefix(k, "[JIT") {
			t.Errorf("%d samples pushed in %s, which report --session does not name", n, k)
		}
	}
}

// TestDaemonPushToken: a Collector that requires a token, reached over
// gRPC. With the wrong token (OTEL_EXPORTER_OTLP_HEADERS) status says
// the credentials were refused, never showing the token, and the
// batches wait in the spool; the daemon started again with the right
// one (a headers file) sends them with its own: every sample of both
// runs arrives.
func TestDaemonPushToken(t *testing.T) {
	perftest.Perf(t)
	needRoot(t, "the daemon samples every CPU")
	jitprof := buildJitprof(t, t.TempDir())
	buildExporter(t, jitprof)
	const right, wrong = "right-5d1c0b7a", "wrong-e3f2a918"
	col := otelcoltest.Start(t, otelcoltest.Options{Token: right})
	dir := filepath.Join(t.TempDir(), "sessions")
	headers := filepath.Join(t.TempDir(), "headers")
	os.WriteFile(headers, []byte("Authorization: Bearer "+right+"\n"), 0o600)
	args := []string{"-a", "-F", "999", "--otlp-protocol", "grpc", "--otlp-insecure", "--otlp-endpoint", col.GRPC, "--otlp-interval", "1s"}

	startDaemon(t, jitprof, dir, append(os.Environ(), "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20"+wrong), args...)
	st := waitStatus(t, jitprof, dir, regexp.MustCompile(`otlp error: .*refused the credentials`), time.Minute)
	if strings.Contains(st, wrong) {
		t.Errorf("status shows the token:\n%s", st)
	}
	if !regexp.MustCompile(`otlp queued: +[1-9]`).MatchString(st) || !strings.Contains(st, "otlp success:    never") {
		t.Errorf("with the credentials refused, status says:\n%s", st)
	}
	daemonCmd(t, jitprof, dir, "stop")
	first := readPushTotals(t, dir)
	if first.sent != 0 || first.queued == 0 || first.pushed != first.taken {
		t.Fatalf("with the wrong token: %+v", first)
	}
	if log, _ := os.ReadFile(filepath.Join(dir, "daemon.log")); strings.Contains(string(log), wrong) {
		t.Errorf("the daemon's log shows the token:\n%s", log)
	}

	startDaemon(t, jitprof, dir, os.Environ(), append(args, "--otlp-headers-file", headers)...)
	waitStatus(t, jitprof, dir, successRE, time.Minute)
	time.Sleep(2 * time.Second)
	waitStatus(t, jitprof, dir, emptyRE, time.Minute)
	daemonCmd(t, jitprof, dir, "stop")
	second := readPushTotals(t, dir)
	if second.queued != 0 || second.pushed != second.taken || second.dropped != 0 {
		t.Errorf("with the right token: %+v", second)
	}
	ss := col.WaitSamples(t, first.pushed+second.pushed, time.Minute)
	var total int64
	for i := range ss {
		total += ss[i].Count()
	}
	if total != first.pushed+second.pushed {
		t.Errorf("the Collector received %d samples; the daemon pushed %d with the wrong token and %d with the right one", total, first.pushed, second.pushed)
	}
}

// TestDaemonPushNode: Node with --perf-basic-prof (a JIT jitprof did not
// write, named by its perf map) under a pushing daemon: node's samples
// arrive as its session counted them, each leaf named as report
// --session names it, but for what a perf map cannot say. A perf map has
// neither times nor generations: the session numbers the snapshots of it
// the daemon read and names code by the snapshot it was live in ("fib
// [gen 2328]"), while the push names it as a recording's report does,
// from the map read after the sample, without the number; and code the
// daemon's snapshots did not yet hold when a sample of it was counted
// (1.5 to 2% of node's samples in the runs here) is left in an anon
// bucket by the session and named by the push. So the perf map's names
// are compared without " [gen N]", and the samples the push names beyond
// the session's must be the ones the session left anonymous, no more
// (no counting statistics: both count the very same samples, so every
// other count agrees exactly).
func TestDaemonPushNode(t *testing.T) {
	perftest.Perf(t)
	needRoot(t, "the daemon samples every CPU")
	perftest.Need(t, "node")
	jitprof := buildJitprof(t, t.TempDir())
	buildExporter(t, jitprof)
	col := otelcoltest.Start(t, otelcoltest.Options{})
	dir := filepath.Join(t.TempDir(), "sessions")
	startDaemon(t, jitprof, dir, nil, "-a", "-F", "4000", "--separate=thread", "--otlp-endpoint", col.HTTP, "--otlp-interval", "2s")
	// 3 s of CPU time: at 4 kHz some 12,000 samples, nearly all in fib.
	script := filepath.Join(t.TempDir(), "fib.js")
	os.WriteFile(script, []byte(`function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
let s = 0;
while (process.cpuUsage().user < 3e6) s += fib(22);
console.log(s);
`), 0o644)
	node := exec.Command(perftest.Need(t, "node"), "--perf-basic-prof", script)
	node.Dir = t.TempDir() // where V8 writes its isolate-*-v8.log, not the package's directory
	if out, err := node.CombinedOutput(); err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	pid := node.Process.Pid
	t.Cleanup(func() { os.Remove(fmt.Sprintf("/tmp/perf-%d.map", pid)) })
	daemonCmd(t, jitprof, dir, "stop")
	tot := readPushTotals(t, dir)
	ss := col.WaitSamples(t, tot.pushed, time.Minute)
	var mine []otlptest.Sample
	for i := range ss {
		if ss[i].Resource["process.pid"] == int64(pid) {
			mine = append(mine, ss[i])
		}
	}
	csv := jpReport(t, jitprof, nil, "--session", "--session-dir", dir, "-l", "--format", "csv", "--anon-samples", fmt.Sprintf("tgid:%d", pid))
	session, wantTotal, _ := csvLeaves(t, csv)
	got, gotTotal := leaves(mine)
	if gotTotal != wantTotal || wantTotal == 0 {
		t.Errorf("node: %d samples pushed, %d in the session", gotTotal, wantTotal)
	}
	gen := regexp.MustCompile(` \[gen \d+\]$`)
	want := map[string]int64{}
	var anon int64
	for k, n := range session {
		switch {
		case strings.HasPrefix(k, "[JIT perfmap]"):
			k = gen.ReplaceAllString(k, "")
		case strings.HasPrefix(k, anonPrefix):
			anon += n
			continue
		}
		want[k] += n
	}
	jit, named := 0, int64(0)
	for k, n := range want {
		perfmap := strings.HasPrefix(k, "[JIT perfmap]")
		if got[k] != n && !(perfmap && got[k] > n) {
			t.Errorf("%s: %d samples pushed, %d in the session", k, got[k], n)
		}
		if perfmap {
			jit++
			named += got[k] - n
		}
		delete(got, k)
	}
	for k, n := range got {
		if !strings.HasPrefix(k, "[JIT perfmap]") {
			t.Errorf("%s: %d samples pushed, none in the session", k, n)
		}
		named += n
	}
	if named != anon {
		t.Errorf("the push named %d samples the session did not, which left %d in anon buckets, of %d", named, anon, wantTotal)
	}
	if jit == 0 {
		t.Errorf("no leaf of node's in JIT code named by the session:\n%s", csv)
	}
	t.Logf("node: %d samples, %d leaves, %d of them JIT code; %d left anonymous by the session", wantTotal, len(want), jit, anon)
}

// TestDaemonPushSpoolBound: with the Collector down, the daemon's
// batches wait in the session directory up to --otlp-spool-max, and
// beyond it the oldest are dropped first and counted in status: the
// spool keeps the newest, an unbroken run of sequence numbers that
// begins where the dropped ones end. Started again with the Collector
// up, the daemon sends what the spool kept, and nothing older: every
// batch dropped held at least an interval of samples from the start, so
// the oldest sample of the first run that arrives is that much later
// than its start, and the newest of them came in the last intervals.
//
// The batches fill the spool's least bound (1 MiB) in tens of seconds:
// busy runs a thread on every CPU at 4 kHz with call graphs, some
// 4,000 samples a second a CPU, each with its time and stack.
func TestDaemonPushSpoolBound(t *testing.T) {
	perftest.Perf(t)
	needRoot(t, "the daemon samples every CPU")
	jitprof := buildJitprof(t, t.TempDir())
	buildExporter(t, jitprof)
	col := otelcoltest.Start(t, otelcoltest.Options{})
	col.Stop()
	dir := filepath.Join(t.TempDir(), "sessions")
	busy := exec.Command(perftest.Busy(t), "100000", strconv.Itoa(max(runtime.NumCPU()-1, 0)))
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Process.Kill(); busy.Wait() })
	const every = time.Second
	args := []string{"-a", "-F", "4000", "-g", "--otlp-endpoint", col.HTTP, "--otlp-interval", every.String(), "--otlp-spool-max", "1M"}
	start := time.Now()
	startDaemon(t, jitprof, dir, nil, args...)
	droppedRE := regexp.MustCompile(`otlp dropped: +(\d+) batches, (\d+) bytes`)
	queuedRE := regexp.MustCompile(`otlp queued: +(\d+) batches, (\d+) bytes`)
	num := func(re *regexp.Regexp, st string, i int) int64 {
		m := re.FindStringSubmatch(st)
		if m == nil {
			t.Fatalf("status says nothing that matches %q:\n%s", re, st)
		}
		n, _ := strconv.ParseInt(m[i], 10, 64)
		return n
	}
	// Three batches dropped: enough that keeping the newest shows in
	// the times that arrive.
	waitStatus(t, jitprof, dir, regexp.MustCompile(`otlp dropped: +([3-9]|\d\d+) batches`), 4*time.Minute)
	before := daemonCmd(t, jitprof, dir, "status")
	names, err := os.ReadDir(filepath.Join(dir, "otlp-spool"))
	if err != nil {
		t.Fatal(err)
	}
	after := daemonCmd(t, jitprof, dir, "status")
	var seqs []uint64
	for _, e := range names {
		if seq, err := strconv.ParseUint(strings.TrimSuffix(e.Name(), ".otlp"), 16, 64); err == nil && strings.HasSuffix(e.Name(), ".otlp") {
			seqs = append(seqs, seq)
		}
	}
	if len(seqs) == 0 {
		t.Fatalf("no batch in the spool; status:\n%s", after)
	}
	slices.Sort(seqs)
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Errorf("the spool holds batches %v: not an unbroken run of the newest", seqs)
			break
		}
	}
	// Nothing was sent: the batches before the spool's first (batches
	// are numbered from 1) are the dropped ones, which status counts
	// (listed between two statuses, as batches come and go meanwhile).
	d0, d1 := num(droppedRE, before, 1), num(droppedRE, after, 1)
	if f := int64(seqs[0]); f-1 < d0 || f-1 > d1 {
		t.Errorf("the spool's oldest batch is number %d; status said %d then %d batches dropped", f, d0, d1)
	}
	if b := num(droppedRE, after, 2); b <= 0 {
		t.Errorf("%d bytes dropped:\n%s", b, after)
	}
	if q := num(queuedRE, after, 2); q > 1<<20 {
		t.Errorf("%d bytes queued, over the spool's bound of 1M:\n%s", q, after)
	}
	if !strings.Contains(after, "otlp success:    never") || !strings.Contains(after, "otlp error:") {
		t.Errorf("with the Collector down, status says:\n%s", after)
	}
	daemonCmd(t, jitprof, dir, "stop")
	stopped := time.Now()
	first := readPushTotals(t, dir)
	dropped := num(droppedRE, after, 1)

	col.Restart()
	startDaemon(t, jitprof, dir, nil, append(slices.Clone(args[:len(args)-2]), "--otlp-spool-max", "256M")...)
	waitStatus(t, jitprof, dir, successRE, time.Minute)
	waitStatus(t, jitprof, dir, emptyRE, time.Minute)
	daemonCmd(t, jitprof, dir, "stop")
	second := readPushTotals(t, dir)
	if second.queued != 0 {
		t.Errorf("the second run left %d batches unsent", second.queued)
	}
	busy.Process.Kill()
	ss := col.Received(t)
	oldest, newest := uint64(math.MaxUint64), uint64(0)
	for i := range ss {
		for _, ts := range ss[i].Times {
			if ts < uint64(stopped.UnixNano()) {
				oldest, newest = min(oldest, ts), max(newest, ts)
			}
		}
	}
	if newest == 0 {
		t.Fatalf("no sample of the first run arrived (%+v)", first)
	}
	// The dropped batches held the samples of at least dropped
	// intervals from the start (less half of one: a sample taken just
	// before a cut may come in the next round, and sample times are
	// tied to the wall clock once a push); the last batches kept,
	// those of the last intervals before the stop (generous: a loaded
	// machine cuts late).
	if got, want := time.Unix(0, int64(oldest)), start.Add(time.Duration(dropped)*every-every/2); got.Before(want) {
		t.Errorf("the oldest sample of the first run that arrived was taken at %v, %v after its start; %d batches of %v were dropped before it",
			got, got.Sub(start), dropped, every)
	}
	if got := time.Unix(0, int64(newest)); stopped.Sub(got) > 10*every {
		t.Errorf("the newest sample of the first run that arrived was taken %v before it stopped", stopped.Sub(got))
	}
	t.Logf("first run: %d batches dropped, %d left in the spool (%v); samples from %v after its start to %v before its stop arrived",
		dropped, first.queued, seqs, time.Unix(0, int64(oldest)).Sub(start), stopped.Sub(time.Unix(0, int64(newest))))
}

// TestDaemonPushPyPy: a daemon pushing to a real Collector follows a
// PyPy's log (PYPYLOG), and its push names the loops as reports do:
// each leaf of the PyPy's pushed samples is named and counted as
// report --session names and counts it, and the loops' shares are those
// jitprof report gives of a recording of the same run (PYPYLOG's log
// embedded), by loop name.
//
// Against the session there are no counting statistics: the daemon
// hands the very same samples to both, so every count agrees, but for
// samples of a loop the session took before the daemon read the loop's
// section of the log, which it leaves in an anon bucket, and the push,
// which names the samples of an interval after its end, may name (not
// those in PyPy's JIT memory outside every loop and bridge, its
// assembler's helpers: anonymous in both). Against
// the recording, two samplings of one run: a loop's share p of n1 and
// of n2 samples differs by a standard deviation of
// sqrt(p(1-p)(1/n1+1/n2)) (p the two pooled); four of them is the
// tolerance. The program spends 2 s of CPU time in its loops, about
// 8,000 samples at 4 kHz in each sampling: a loop of a third has
// 4 sigma of 3 points, and at least 2,000 are asked for of each.
func TestDaemonPushPyPy(t *testing.T) {
	perftest.Perf(t)
	needRoot(t, "the daemon samples every CPU")
	pypy := perftest.Need(t, "pypy3")
	jitprof := buildJitprof(t, t.TempDir())
	buildExporter(t, jitprof)
	col := otelcoltest.Start(t, otelcoltest.Options{})
	dir := t.TempDir()
	sessions := filepath.Join(t.TempDir(), "sessions")
	script, truthFile, pidFile := filepath.Join(dir, "prog.py"), filepath.Join(dir, "truth.json"), filepath.Join(dir, "pid")
	data := filepath.Join(dir, "perf.data")
	prog := strings.Replace(pypyFlat, `budget = {"ints": 0.6, "floats": 0.4, "lists": 0.25}`, `budget = {"ints": 0.9, "floats": 0.7, "lists": 0.4}`, 1)
	if prog == pypyFlat {
		t.Fatal("the budget line of pypyFlat changed")
	}
	if err := os.WriteFile(script, []byte(prog+pypyDriver+pypyPid), 0o644); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, jitprof, sessions, nil, "-a", "-F", "4000", "-m", "1024", "--separate=thread", "--otlp-endpoint", col.HTTP, "--otlp-interval", "2s")
	rec := exec.Command(jitprof, "record", "-q", "-F", "4000", "-m", "512", "-o", data, "--", pypy, script, truthFile, pidFile)
	rec.Dir = dir
	rec.Env = append(os.Environ(), "PYPYLOG=jit-backend-addr,jit-log-opt:pypy.log")
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("jitprof record: %v\n%s", err, out)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	status := daemonCmd(t, jitprof, sessions, "status")
	daemonCmd(t, jitprof, sessions, "stop")
	tot := readPushTotals(t, sessions)
	ss := col.WaitSamples(t, tot.pushed, time.Minute)
	var mine []otlptest.Sample
	for i := range ss {
		if ss[i].Resource["process.pid"] == int64(pid) {
			mine = append(mine, ss[i])
		}
	}
	pushed, pushedTotal := leaves(mine)

	// The session's leaves: the push names what it names, and the
	// samples it left anonymous (at most).
	csvText := jpReport(t, jitprof, nil, "--session", "--session-dir", sessions, "-l", "--format", "csv", "--anon-samples", fmt.Sprintf("tgid:%d", pid))
	session, sessionTotal, _ := csvLeaves(t, csvText)
	if pushedTotal != sessionTotal || sessionTotal == 0 {
		t.Errorf("pypy: %d samples pushed, %d in the session", pushedTotal, sessionTotal)
	}
	const pypyImage, anonBucket = "[JIT pypy] ", anonPrefix
	var anon, pushedAnon, named int64
	got := maps.Clone(pushed)
	for k, n := range session {
		if strings.HasPrefix(k, anonBucket) {
			anon += n
			continue
		}
		if got[k] != n && !(strings.HasPrefix(k, pypyImage) && got[k] > n) {
			t.Errorf("%s: %d samples pushed, %d in the session", k, got[k], n)
		}
		named += got[k] - n
		delete(got, k)
	}
	for k, n := range got {
		switch {
		case strings.HasPrefix(k, anonBucket):
			pushedAnon += n
		case strings.HasPrefix(k, pypyImage):
			named += n
		default:
			t.Errorf("%s: %d samples pushed, none in the session", k, n)
		}
	}
	// Samples in the JIT memory outside every loop and bridge are
	// anonymous in both.
	if pushedAnon > anon || named != anon-pushedAnon {
		t.Errorf("the push named %d samples the session did not and left %d anonymous; the session left %d in anon buckets", named, pushedAnon, anon)
	}

	// The recording's leaves: each loop's share of the samples in the
	// program's loops.
	recCSV := runOK(t, jitprof, "report", "-i", data, "-l", "--anon-samples", "--format", "csv")
	recorded, _, _ := csvLeaves(t, recCSV)
	loopShares := func(m map[string]int64) (map[string]float64, int64) {
		s := map[string]float64{}
		var n int64
		for k, c := range m {
			if _, name, ok := strings.Cut(k, "|"); ok && strings.HasPrefix(k, pypyImage) && strings.Contains(name, " [loop ") {
				s[name] += float64(c)
				n += c
			}
		}
		for name := range s {
			s[name] /= float64(max(n, 1))
		}
		return s, n
	}
	ps, pn := loopShares(pushed)
	rs, rn := loopShares(recorded)
	if pn < 2000 || rn < 2000 {
		t.Fatalf("%d samples pushed and %d recorded in PyPy's loops: want thousands of each\ndaemon status:\n%s\nsession:\n%s\nrecording:\n%s", pn, rn, status, csvText, recCSV)
	}
	names := map[string]bool{}
	for name := range ps {
		names[name] = true
	}
	for name := range rs {
		names[name] = true
	}
	for name := range names {
		p := (ps[name]*float64(pn) + rs[name]*float64(rn)) / float64(pn+rn)
		sigma := math.Sqrt(p * (1 - p) * (1/float64(pn) + 1/float64(rn)))
		if d := math.Abs(ps[name] - rs[name]); d > 4*sigma {
			t.Errorf("%s: %.2f%% of the %d samples pushed in loops, %.2f%% of the %d recorded: %.2f points apart, more than %.2f",
				name, 100*ps[name], pn, 100*rs[name], rn, 100*d, 400*sigma)
		}
	}
	for _, fn := range []string{"ints", "floats", "lists"} {
		found := false
		for name := range ps {
			found = found || strings.HasPrefix(name, fn+" [loop ")
		}
		if !found {
			t.Errorf("no loop of %s pushed: %v", fn, ps)
		}
	}
	t.Logf("pushed in loops %d: %v; recorded %d: %v; the push named %d samples the session left anonymous, and left %d anonymous", pn, ps, rn, rs, named, pushedAnon)
}

// anonPrefix begins the name of every anonymous bucket a session report
// has: a process's, "anon (tgid:PID range:...)", and "anon (all
// processes)", where the daemon counts a process's samples in JIT memory
// before it has found the JIT's data (seen under load: 15 samples of a
// PyPy counted before ingest found its log). Both are samples the session
// left unnamed, which the push may name from the JIT data it reads later.
const anonPrefix = "anon ("
