package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/jitlog"
)

// startDaemon starts jitprof's daemon on dir with args and stops it when
// the test ends.
func startDaemon(t *testing.T, jitprof, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(jitprof, append([]string{"daemon", "start", "--session-dir", dir}, args...)...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "daemon.log"))
		t.Fatalf("jitprof daemon start: %v\n%s\nlog:\n%s", err, out, log)
	}
	t.Cleanup(func() { exec.Command(jitprof, "daemon", "stop", "--session-dir", dir).Run() })
}

func daemonCmd(t *testing.T, jitprof, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command(jitprof, append(append([]string{"daemon"}, args...), "--session-dir", dir)...).CombinedOutput()
	if err != nil {
		t.Fatalf("jitprof daemon %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// report runs jitprof report with args and returns its standard output.
func jpReport(t *testing.T, jitprof string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(jitprof, append([]string{"report"}, args...)...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jitprof report %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// TestDaemonAgreesWithRecord: a session the daemon recorded around a
// workload reports the per-symbol percentages of jitprof record of the
// same run, within 1 point, in user space. Both sample the same process
// at once, each with its own event: 10 kHz for about 4 s gives each some
// 40,000 samples, so the two samplings differ by 0.3 points (one
// standard deviation) on a symbol with a third of them. The kernel's
// symbols are left out of the comparison (only their sum is shown):
// where a timer sample lands in the kernel depends on the other event
// (the daemon's per-CPU timer and record's per-task one interrupt each
// other's handling, and the per-task event stops partway through a
// context switch), so under load one kernel symbol differed by 1.2
// points, 13 standard deviations, between two samplings of one run.
func TestDaemonAgreesWithRecord(t *testing.T) {
	perftest.Perf(t)
	needRoot(t, "the daemon samples every CPU")
	jitprof, _ := buildTools(t)
	busy := perftest.Busy(t)
	dir := filepath.Join(t.TempDir(), "sessions")
	startDaemon(t, jitprof, dir, nil, "-a", "-F", "10000", "--separate=kernel,thread")
	data := filepath.Join(t.TempDir(), "perf.data")
	if out, err := exec.Command(jitprof, "record", "-q", "-F", "10000", "-o", data, "--", busy, "1300").CombinedOutput(); err != nil {
		t.Fatalf("jitprof record: %v\n%s", err, out)
	}
	daemonCmd(t, jitprof, dir, "dump")
	rec, recAll, recKernel := userShares(t, jpReport(t, jitprof, nil, "-i", data, "-l", "--format", "csv"))
	ses, sesAll, sesKernel := userShares(t, jpReport(t, jitprof, nil, "--session", "--session-dir", dir, "-l", "--format", "csv", "image:"+busy))
	if recAll < 99 || sesAll < 99 {
		t.Fatalf("shares add up to %.1f%% (record) and %.1f%% (session)", recAll, sesAll)
	}
	for _, sym := range []string{"work_a", "work_b"} {
		if rec[sym] < 20 {
			t.Fatalf("%s has %.1f%% of the recording's samples: %v", sym, rec[sym], rec)
		}
	}
	worst := 0.0
	for sym, pc := range rec {
		if pc < 1 && ses[sym] < 1 {
			continue
		}
		d := math.Abs(pc - ses[sym])
		if d > 1 {
			t.Errorf("%s: %.2f%% in the daemon's session, %.2f%% in jitprof record's", sym, ses[sym], pc)
		}
		worst = max(worst, d)
	}
	for sym, pc := range ses {
		if _, ok := rec[sym]; !ok && pc >= 1 {
			t.Errorf("%s: %.2f%% in the daemon's session, none in jitprof record's", sym, pc)
		}
	}
	t.Logf("per-symbol shares of user space within %.2f points (work_a %.2f%% vs %.2f%%); the kernel's share %.2f%% vs %.2f%%", worst, ses["work_a"], rec["work_a"], sesKernel, recKernel)
}

// userShares is report's CSV as csvShares reads it, but of user space
// only: each symbol's share of the samples outside the kernel. It also
// returns the sum of every row's share and the kernel's.
func userShares(t *testing.T, text string) (shares map[string]float64, all, kernel float64) {
	t.Helper()
	rows := csvRows(t, text)
	shares = map[string]float64{}
	for _, r := range rows {
		all += r.pc
		if strings.HasPrefix(r.dso, "[kernel.") || strings.HasPrefix(r.dso, "[guest.kernel.") {
			kernel += r.pc
		}
	}
	if all-kernel <= 0 {
		t.Fatalf("no samples in user space:\n%s", text)
	}
	for _, r := range rows {
		if !strings.HasPrefix(r.dso, "[kernel.") && !strings.HasPrefix(r.dso, "[guest.kernel.") {
			shares[r.sym] += r.pc * 100 / (all - kernel)
		}
	}
	return shares, all, kernel
}

// minijitRun is one run of minijit, recorded by jitprof record beside
// the daemon.
type minijitRun struct {
	data string
	env  []string // minijit's, and pathtime's: its jitlog directory
	// reportEnv is the report's environment, env if nil.
	reportEnv []string
	pid       int
	truth     map[string]float64
}

// recordMinijit runs jitprof record -- minijit with flags; before, when
// set, is called once minijit has generated code and is stopped
// (SIGSTOP), and minijit goes on after it returns.
func recordMinijit(t *testing.T, jitprof, minijit, jitlogDir string, before func(pid int), flags ...string) minijitRun {
	t.Helper()
	dir := t.TempDir()
	r := minijitRun{data: filepath.Join(dir, "perf.data"), env: append(os.Environ(), "JITPROF_JITLOG_DIR="+jitlogDir)}
	truthPath := filepath.Join(dir, "truth.json")
	args := append([]string{"record", "-q", "-F", "4000", "-o", r.data, "--", minijit, "-duration", "3s", "-truth", truthPath, "-quiet"}, flags...)
	rec := exec.Command(jitprof, args...)
	rec.Env = r.env
	var out strings.Builder
	rec.Stdout, rec.Stderr = &out, &out
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	if before != nil {
		pid := waitForJIT(t, jitlogDir)
		syscall.Kill(pid, syscall.SIGSTOP)
		before(pid)
		syscall.Kill(pid, syscall.SIGCONT)
	}
	if err := rec.Wait(); err != nil {
		t.Fatalf("jitprof record: %v\n%s", err, out.String())
	}
	r.pid, r.truth = readTruth(t, truthPath)
	return r
}

// waitForJIT waits until a minijit has logged a code load into its
// jitlog database in dir, and returns its pid.
func waitForJIT(t *testing.T, dir string) int {
	t.Helper()
	for range 1000 {
		dbs, _ := filepath.Glob(filepath.Join(dir, "anon.*"))
		for _, db := range dbs {
			var pid int
			if _, err := fmt.Sscanf(filepath.Base(db), "anon.%d", &pid); err != nil {
				continue
			}
			recs, _ := jitlog.Read(db, nil)
			for _, r := range recs {
				if _, ok := r.(*jitlog.LoadRecord); ok {
					return pid
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no minijit logged a code load in %s", dir)
	return 0
}

// checkSession checks the daemon's report of minijit's process: its JIT
// rows (image prefix) name the generations minijit ran and nothing else,
// each within 2 points of the recording's samples charged by minijit's
// log (the same run, sampled by jitprof record beside the daemon), and
// within 4 of minijit's measurement (see checkGenerations for why 4).
func checkSession(t *testing.T, jitprof, dir string, r minijitRun, prefix string) {
	t.Helper()
	sampled := sampledShares(t, jitprof, r.data, r.env)
	env := r.reportEnv
	if env == nil {
		env = r.env
	}
	cmd := exec.Command(jitprof, "report", "--session", "--session-dir", dir, "-l", "--format", "csv", "--anon-samples", fmt.Sprintf("tgid:%d", r.pid))
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jitprof report --session: %v\n%s", err, stderr.String())
	}
	// 2 points: 3 s of minijit at 4 kHz are some 12,000 JIT samples in
	// each sampling; for a share of 15% (minijit's largest) the standard
	// deviation of the difference of two independent samplings would be
	// sqrt(2*0.15*0.85/12000) = 0.46 points, and 2 points is four of them.
	// The two timers sample one run, so they agree far closer: 0.07 to
	// 0.41 points in 18 runs beside stress-ng.
	compareGenerations(t, string(out), prefix, r.truth, sampled, 2)
	if t.Failed() {
		man, _ := os.ReadFile(filepath.Join(dir, "samples", "current", "jit", fmt.Sprint(r.pid), "process.json"))
		status, _ := exec.Command(jitprof, "daemon", "status", "--session-dir", dir).CombinedOutput()
		t.Logf("the report said:\n%s\nthe session's manifest: %s\nthe daemon's status:\n%s", stderr.String(), man, status)
	}
}

// TestDaemonMinijit: minijit under the daemon, started after it and
// before it (its code generated while no daemon ran), and a JIT whose
// only data is a jitdump: every generation of its re-generated functions
// is named apart, from the sequence numbers the daemon stored.
func TestDaemonMinijit(t *testing.T) {
	perftest.Perf(t)
	needRoot(t, "the daemon samples every CPU")
	jitprof, minijit := buildTools(t)
	t.Run("daemon first", func(t *testing.T) {
		dir, jl := filepath.Join(t.TempDir(), "sessions"), t.TempDir()
		env := append(os.Environ(), "JITPROF_JITLOG_DIR="+jl)
		startDaemon(t, jitprof, dir, env, "-a", "-F", "4000", "--separate=thread")
		r := recordMinijit(t, jitprof, minijit, jl, nil)
		daemonCmd(t, jitprof, dir, "dump")
		checkSession(t, jitprof, dir, r, "[JIT jitlog]")
	})
	t.Run("JIT first", func(t *testing.T) {
		dir, jl := filepath.Join(t.TempDir(), "sessions"), t.TempDir()
		env := append(os.Environ(), "JITPROF_JITLOG_DIR="+jl)
		r := recordMinijit(t, jitprof, minijit, jl, func(int) {
			startDaemon(t, jitprof, dir, env, "-a", "-F", "4000", "--separate=thread")
		})
		daemonCmd(t, jitprof, dir, "dump")
		checkSession(t, jitprof, dir, r, "[JIT jitlog]")
	})
	t.Run("jitdump only", func(t *testing.T) {
		dir, jl := filepath.Join(t.TempDir(), "sessions"), t.TempDir()
		// The daemon looks for jitlog databases elsewhere: minijit's
		// jitdump, found by its marker mapping, is all it has.
		env := append(os.Environ(), "JITPROF_JITLOG_DIR="+t.TempDir())
		startDaemon(t, jitprof, dir, env, "-a", "-F", "4000", "--separate=thread")
		r := recordMinijit(t, jitprof, minijit, jl, nil, "-jitdump")
		daemonCmd(t, jitprof, dir, "dump")
		// The report, too, must use the copy the daemon kept, with no
		// jitlog database to be found.
		r.reportEnv = env
		checkSession(t, jitprof, dir, r, "[JIT jitdump]")
	})
}

// busySamples is the number of samples of busy in the session of dir.
func busySamples(t *testing.T, jitprof, dir, busy string) uint64 {
	t.Helper()
	out := jpReport(t, jitprof, nil, "--session", "--session-dir", dir, "--format", "json", "image:"+busy)
	var r struct {
		Events []struct{ Samples uint64 }
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Events) == 0 {
		t.Fatalf("report JSON: %v\n%s", err, out)
	}
	return r.Events[0].Samples
}

func daemonPID(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "jitprofd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	return pid
}

// TestDaemonKilled: a daemon killed with SIGKILL leaves a session that
// reports, with the counts of its last flush; started again, the daemon
// notices the stale pid file and keeps counting into the same session.
func TestDaemonKilled(t *testing.T) {
	perftest.Perf(t)
	needRoot(t, "the daemon samples every CPU")
	jitprof, _ := buildTools(t)
	busy := perftest.Busy(t)
	dir := filepath.Join(t.TempDir(), "sessions")
	startDaemon(t, jitprof, dir, nil, "-a", "--flush", "300ms")
	perftest.Run(t, busy, "300")
	time.Sleep(time.Second) // a flush or more
	pid := daemonPID(t, dir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for syscall.Kill(pid, 0) == nil {
		time.Sleep(10 * time.Millisecond)
	}
	first := busySamples(t, jitprof, dir, busy)
	if first < 100 {
		t.Fatalf("the killed daemon's session has %d samples of busy, want its ~1 s at 1 kHz", first)
	}
	out, err := exec.Command(jitprof, "daemon", "start", "-a", "--session-dir", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("jitprof daemon start after a kill: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "stale pid file") {
		t.Errorf("start after a kill does not mention the stale pid file:\n%s", out)
	}
	perftest.Run(t, busy, "300")
	daemonCmd(t, jitprof, dir, "dump")
	if second := busySamples(t, jitprof, dir, busy); second < first+100 {
		t.Errorf("after the restart the session has %d samples of busy, %d before: it does not keep counting", second, first)
	}
	meta, err := os.ReadFile(filepath.Join(dir, "samples", "current", "session.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Runs []struct {
			Stop time.Time
			PID  int
		}
	}
	json.Unmarshal(meta, &m)
	if len(m.Runs) != 2 || m.Runs[0].PID != pid || !m.Runs[0].Stop.IsZero() {
		t.Errorf("session.json's runs: %+v, want the killed one (pid %d, no stop) and the running one", m.Runs, pid)
	}
}

// TestDaemonOnePerDirectory: a second start on a directory with a daemon
// says so and fails; with the pid file gone, the second daemon still
// cannot take the session (its lock), and start fails.
func TestDaemonOnePerDirectory(t *testing.T) {
	perftest.Perf(t)
	needRoot(t, "the daemon samples every CPU")
	jitprof, _ := buildTools(t)
	dir := filepath.Join(t.TempDir(), "sessions")
	startDaemon(t, jitprof, dir, nil, "-a")
	pid := daemonPID(t, dir)
	out, err := exec.Command(jitprof, "daemon", "start", "-a", "--session-dir", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), fmt.Sprintf("a daemon is running on %s (pid %d)", dir, pid)) {
		t.Errorf("second start: %v\n%s", err, out)
	}
	if err := os.Remove(filepath.Join(dir, "jitprofd.pid")); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(jitprof, "daemon", "start", "-a", "--session-dir", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "in use by another process") {
		t.Errorf("second start without the pid file: %v\n%s", err, out)
	}
	if syscall.Kill(pid, 0) != nil {
		t.Errorf("the first daemon is gone")
	}
	st := daemonCmd(t, jitprof, dir, "status")
	if !strings.Contains(st, fmt.Sprintf("pid %d", pid)) {
		t.Errorf("status does not come from the first daemon:\n%s", st)
	}
	fi, err := os.Stat(filepath.Join(dir, "control"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("control socket: %v, mode %v, want 0600", err, fi.Mode())
	}
	writePIDFile := os.WriteFile(filepath.Join(dir, "jitprofd.pid"), []byte(fmt.Sprint(pid)), 0o600)
	if writePIDFile != nil {
		t.Fatal(writePIDFile)
	}
}

// TestImport: a recording imported into a session reports what the
// recording does, symbol by symbol: jitprof's own, whose JIT code is
// named from the data it embedded (after the JIT's files are gone), and
// Linux perf's.
func TestImport(t *testing.T) {
	perftest.Perf(t)
	jitprof, minijit := buildTools(t)
	data, env, _ := runMinijit(t, jitprof, minijit)
	busyData := perftest.Record(t, "perf.data", "-F", "4000", "--", perftest.Busy(t), "300")
	for _, tc := range []struct {
		name, data string
		flags      []string
	}{
		{"jitprof record of minijit", data, []string{"--anon-samples"}},
		{"perf record of busy", busyData, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "sessions")
			cmd := exec.Command(jitprof, "import", "--session-dir", dir, "--session", "imported", tc.data)
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("jitprof import: %v\n%s", err, out)
			}
			// The JIT's own files are gone: the session's copies name it.
			noJIT := append(os.Environ(), "JITPROF_JITLOG_DIR="+t.TempDir())
			rec, _ := csvShares(t, jpReport(t, jitprof, env, append([]string{"-i", tc.data, "-l", "--format", "csv"}, tc.flags...)...), "")
			ses, _ := csvShares(t, jpReport(t, jitprof, noJIT, append([]string{"--session=imported", "--session-dir", dir, "-l", "--format", "csv"}, tc.flags...)...), "")
			named := 0
			for sym, pc := range rec {
				if strings.HasPrefix(sym, "0x") {
					continue // unnamed addresses are not compared
				}
				if d := math.Abs(pc - ses[sym]); d > 0.1 {
					t.Errorf("%s: %.2f%% in the session, %.2f%% in the recording", sym, ses[sym], pc)
				}
				if strings.Contains(sym, "[gen ") {
					named++
				}
			}
			if tc.flags != nil && named < 4 {
				t.Errorf("the recording names %d JIT generations, want minijit's", named)
			}
			if tc.flags == nil {
				return
			}
			// jitprof web on the session: the same names on its page.
			url, stderr := startWeb(t, jitprof, noJIT, "--session=imported", "--session-dir", dir, "--anon-samples")
			resp, err := http.Get(url)
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "[gen ") {
				t.Errorf("jitprof web --session: %s, no JIT generation on the page\n%s", resp.Status, stderr())
			}
		})
	}
}

// TestDaemonDiskFull: on a full disk the daemon keeps sampling, and
// status says the disk is full; given room, the counts reach the files.
func TestDaemonDiskFull(t *testing.T) {
	perftest.Perf(t)
	needRoot(t, "the daemon samples every CPU, and the test mounts a tmpfs")
	jitprof, _ := buildTools(t)
	busy := perftest.Busy(t)
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	// Fill it, but for what the daemon needs to start.
	if f, err := os.Create(filepath.Join(dir, "filler")); err == nil {
		f.Write(make([]byte, 40<<10))
		f.Close()
	}
	startDaemon(t, jitprof, dir, nil, "-a", "--flush", "200ms")
	perftest.Run(t, busy, "200")
	var st string
	for range 50 {
		st = daemonCmd(t, jitprof, dir, "status")
		if strings.Contains(st, "disk:            FULL") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(st, "disk:            FULL") {
		t.Fatalf("status on a full disk:\n%s", st)
	}
	// The daemon keeps counting on the full disk. Whether some counts
	// wait in memory depends on which write the disk refused first: a
	// sample file, or the session's metadata after the files took every
	// count (as in a -count=3 run, its 1,306 samples in 3 small files):
	// not asked.
	full, _, _ := statusCounts(t, st)
	for range 50 {
		time.Sleep(100 * time.Millisecond)
		st = daemonCmd(t, jitprof, dir, "status")
		if n, _, _ := statusCounts(t, st); n > full {
			break
		}
	}
	if n, _, _ := statusCounts(t, st); n <= full || !strings.Contains(st, "disk:            FULL") {
		t.Fatalf("on the full disk the daemon stopped counting (%d samples, then %d):\n%s", full, n, st)
	}
	full, _, _ = statusCounts(t, st)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, "size=64m"); err != nil {
		t.Fatal(err)
	}
	daemonCmd(t, jitprof, dir, "dump")
	st = daemonCmd(t, jitprof, dir, "status")
	if !strings.Contains(st, "disk:            ok") {
		t.Errorf("status once there is room:\n%s", st)
	}
	// Every sample counted while the disk was full is in the files now.
	if _, flushed, dropped := statusCounts(t, st); flushed < full || dropped > 0 {
		t.Errorf("after the dump %d samples are in files (%d dropped), %d were counted while the disk was full:\n%s", flushed, dropped, full, st)
	}
	if n := busySamples(t, jitprof, dir, busy); n < 100 {
		t.Errorf("the session has %d samples of busy, counted while the disk was full", n)
	}
}

// statusCounts reads the counts line of daemon status (without -g,
// counts are samples).
func statusCounts(t *testing.T, st string) (counts, flushed, dropped uint64) {
	t.Helper()
	for line := range strings.Lines(st) {
		if s, ok := strings.CutPrefix(line, "counts:"); ok {
			if _, err := fmt.Sscanf(strings.TrimSpace(s), "%d samples, %d in files, %d dropped", &counts, &flushed, &dropped); err != nil {
				t.Fatalf("status: %v\n%s", err, st)
			}
			return
		}
	}
	t.Fatalf("status has no counts line:\n%s", st)
	return
}
