package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/perfdata"
)

// countSamples reads a file as far as it goes; a recording in progress
// or killed has a torn end at worst.
func countSamples(path string) (samples, kernel uint64, f *perfdata.File, err error) {
	f, err = perfdata.Open(path)
	if err != nil {
		return 0, 0, nil, err
	}
	rs := f.Records()
	for rs.Next() {
		if s, ok := rs.Record().(*perfdata.Sample); ok {
			samples++
			if s.CPUMode() == perfdata.MiscKernel {
				kernel++
			}
		}
	}
	return samples, kernel, f, rs.Err()
}

func scriptSamples(t *testing.T, path string) uint64 {
	out := perftest.Run(t, perftest.Perf(t), "script", "-i", path, "--force", "-G", "-F", "ip")
	return uint64(strings.Count(out, "\n"))
}

// TestRecordSignals stops a recording with SIGINT, which must leave a
// complete file and pass on the command's status, and with SIGKILL, which
// must leave a file perf still reads to its last whole record.
func TestRecordSignals(t *testing.T) {
	busy := perftest.Busy(t)
	bin := buildJitprof(t, t.TempDir())
	for _, tc := range []struct {
		sig        syscall.Signal
		wantStatus int // jitprof's; -1 for killed
	}{
		{syscall.SIGINT, 128 + int(syscall.SIGTERM)}, // the recorder ends the command with SIGTERM
		{syscall.SIGTERM, 128 + int(syscall.SIGTERM)},
		{syscall.SIGKILL, -1},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "perf.data")
			cmd := exec.Command(bin, "record", "-q", "-o", out, "--", busy, "1000000")
			// A file, not a pipe: the workload inherits it and may
			// outlive a killed jitprof, which must not hold up Wait.
			stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
			if err != nil {
				t.Fatal(err)
			}
			defer stderr.Close()
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			child := 0
			t.Cleanup(func() {
				cmd.Process.Kill()
				if child > 0 {
					syscall.Kill(child, syscall.SIGKILL)
				}
			})
			// Wait for samples the workload really ran for, as the file
			// is flushed every round.
			for {
				if child == 0 {
					child = childOf(cmd.Process.Pid)
				}
				if n, _, f, _ := countSamples(out); f != nil {
					f.Close()
					if n >= 300 {
						break
					}
				}
				select {
				case err := <-exited:
					t.Fatalf("jitprof exited early: %v\n%s", err, readAll(stderr))
				case <-time.After(20 * time.Millisecond):
				}
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			err = <-exited
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			if got := cmd.ProcessState.ExitCode(); got != tc.wantStatus {
				t.Errorf("jitprof exit status %d, want %d; stderr:\n%s", got, tc.wantStatus, readAll(stderr))
			}
			n, _, f, err := countSamples(out)
			if err != nil {
				t.Fatalf("reading %s: %v", out, err)
			}
			defer f.Close()
			if n < 300 {
				t.Errorf("%d samples in the file, want at least the 300 seen while recording", n)
			}
			// A killed recorder leaves the size of its last round in the
			// header, for perf's sake, but no features.
			if killed := tc.sig == syscall.SIGKILL; f.Features.Has(perfdata.FeatBuildID) == killed {
				t.Errorf("BUILD_ID feature present = %v, want %v", !killed, killed)
			}
			if got := scriptSamples(t, out); got != n {
				t.Errorf("perf script printed %d samples, the file holds %d", got, n)
			}
		})
	}
}

// TestRecordUnprivileged records as nobody: perf_event_paranoid 2 allows
// user space only, which jitprof must fall back to and say, and refuses
// -a with a message that says what to change.
func TestRecordUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("this test switches to nobody, which needs root, which CI has")
		}
		t.Skip("needs root to run jitprof as nobody")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	paranoid, err := linux.Paranoid()
	if err != nil {
		t.Fatal(err)
	}
	// t.TempDir's parents are private to root; nobody needs a way in.
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

	asNobody := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return stderr.String(), cmd.ProcessState.ExitCode()
	}

	out := filepath.Join(dir, "perf.data")
	stderr, status := asNobody("record", "-o", out, "--", busy, "100")
	if status != 0 {
		t.Fatalf("jitprof record as nobody: status %d:\n%s", status, stderr)
	}
	n, kernel, f, err := countSamples(out)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n < 200 {
		t.Errorf("%d samples; want at least 200 from 0.3 s of CPU", n)
	}
	if paranoid >= 2 {
		if kernel != 0 {
			t.Errorf("%d kernel samples at perf_event_paranoid %d", kernel, paranoid)
		}
		if !strings.Contains(stderr, "perf_event_paranoid") || !strings.Contains(stderr, "user space only") {
			t.Errorf("no word of the user-space-only fall-back:\n%s", stderr)
		}
	}
	if paranoid >= 1 {
		stderr, status = asNobody("record", "-a", "-o", out, "--duration", "1s")
		if status != 1 || !strings.Contains(stderr, "perf_event_paranoid") || !strings.Contains(stderr, "CAP_PERFMON") {
			t.Errorf("-a as nobody: status %d, want 1 with what to change:\n%s", status, stderr)
		}
	}
}

// childOf returns a child process of pid, or 0.
func childOf(pid int) int {
	pids, _ := linux.Host.PIDs()
	for _, p := range pids {
		if pr, err := linux.Host.Process(p); err == nil && pr.PPID == pid {
			return p
		}
	}
	return 0
}

func readAll(f *os.File) string {
	b, _ := os.ReadFile(f.Name())
	return string(b)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRecordUsage(t *testing.T) {
	for _, args := range [][]string{
		{},                            // no target
		{"-a", "-p", "1"},             // two targets
		{"-F", "99", "-c", "9", "-a"}, // frequency and period
		{"--freq", "99", "--count", "9", "-a"},
		{"-p", "x"},
		{"-F", "fast", "-a"},
		{"--call-graph", "lbr", "-a"},     // fp and dwarf only
		{"--call-graph", "dwarf,0", "-a"}, // no stack to dump
	} {
		if err := runRecord(args); !errors.Is(err, cli.ErrUsage) {
			t.Errorf("record %q: %v, want a usage error", args, err)
		}
	}
}

// TestRecordPipe records with -o -, as perf record does: perf's pipe
// mode on standard output, which perf reads from standard input as it
// reads the same recording from a file, with the command's own output
// sent to standard error, out of the stream.
func TestRecordPipe(t *testing.T) {
	busy := perftest.Busy(t)
	dir := t.TempDir()
	bin := buildJitprof(t, dir)
	cmd := exec.Command(bin, "record", "-q", "-g", "-o", "-", "--", "sh", "-c", "echo to-stdout; exec "+busy+" 200")
	var stream, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stream, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("jitprof record -o -: %v\n%s", err, stderr.String())
	}
	// The command prints before any sample: on standard output it
	// would come before the stream's magic.
	if !strings.Contains(stderr.String(), "to-stdout\n") || !bytes.HasPrefix(stream.Bytes(), []byte("PERFILE2")) {
		t.Errorf("the command's output should go to standard error only; stderr: %q, stream starts %q", stderr.String(), stream.Bytes()[:min(16, stream.Len())])
	}
	f, err := perfdata.NewStream(bytes.NewReader(stream.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var samples uint64
	r := f.Records()
	for r.Next() {
		if _, ok := r.Record().(*perfdata.Sample); ok {
			samples++
		}
	}
	if r.Err() != nil || samples < 100 {
		t.Fatalf("the stream holds %d samples (%v); want hundreds", samples, r.Err())
	}
	ids, err := f.Features.BuildIDs()
	if err != nil || !slices.ContainsFunc(ids, func(b perfdata.BuildID) bool { return b.Filename == busy }) {
		t.Errorf("no build-id of %s in the stream: %v %v", busy, ids, err)
	}
	path := filepath.Join(dir, "stream.data")
	if err := os.WriteFile(path, stream.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	perf := perftest.Perf(t)
	got := perftest.Run(t, "sh", "-c", perf+" script --force -F comm,tid,ip,sym -i - < "+path)
	if n := strings.Count(got, "\n"); uint64(n) < samples || !strings.Contains(got, "work_a") {
		t.Errorf("perf script -i - printed %d lines for %d samples, or no work_a:\n%.2000s", n, samples, got)
	}
}

// TestRecordPerfSpellings records with perf record's long options and
// -F max, and reads back what they asked for.
func TestRecordPerfSpellings(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_max_sample_rate")
	if err != nil {
		t.Fatal(err)
	}
	maxRate, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	dir := t.TempDir()
	// -F max samples a sleeping process: in VMs where each timer
	// interrupt costs tens of microseconds, even `true` takes seconds to
	// run under 100,000 samples a second, for perf as for jitprof.
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	idle := []string{"-p", strconv.Itoa(sleeper.Process.Pid), "--duration", "100ms"}
	for _, c := range []struct {
		args   []string
		freq   uint64
		period uint64
		chain  bool
	}{
		{[]string{"--event", "task-clock", "--freq", "99", "--call-graph", "fp", "--", "true"}, 99, 0, true},
		{append([]string{"-F", "max"}, idle...), maxRate, 0, false},
		{[]string{"--count", "100000", "--mmap-pages", "4", "--quiet", "--", "true"}, 0, 100000, false},
	} {
		out := filepath.Join(dir, "perf.data")
		args := append([]string{"--output", out}, c.args...)
		if err := runRecord(args); err != nil {
			t.Fatalf("record %q: %v", args, err)
		}
		f, err := perfdata.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		a := f.Attrs[0]
		f.Close()
		freq, period := uint64(0), a.SamplePeriod
		if a.Freq() {
			freq, period = a.SamplePeriod, 0
		}
		if freq != c.freq || period != c.period || (a.SampleType&perfdata.SampleCallchain != 0) != c.chain {
			t.Errorf("record %q: frequency %d, period %d, callchains %v; want %d, %d, %v", c.args, freq, period,
				a.SampleType&perfdata.SampleCallchain != 0, c.freq, c.period, c.chain)
		}
	}
}

// TestRecordMountsTracefs records a tracepoint where tracefs is not
// mounted, as on a freshly booted machine: in a private mount namespace
// whose tracefs places are covered by empty tmpfs, jitprof must mount
// tracefs as perf does, say so, and record the tracepoint.
func TestRecordMountsTracefs(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("this test needs root, which CI has")
		}
		t.Skip("needs root: mounting tracefs")
	}
	unshare := perftest.Need(t, "unshare")
	dir := t.TempDir()
	jitprof := buildJitprof(t, dir)
	data := filepath.Join(dir, "perf.data")
	script := `set -e
for d in /sys/kernel/tracing /sys/kernel/debug; do mount -t tmpfs none "$d"; done
exec "$0" record -e sched:sched_switch -o "$1" -- sh -c 'for i in 1 2 3 4; do sleep 0.01; done'`
	cmd := exec.Command(unshare, "-m", "--propagation", "private", "sh", "-c", script, jitprof, data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("record: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "mounted tracefs at /sys/kernel/tracing") {
		t.Errorf("stderr does not say tracefs was mounted:\n%s", stderr.String())
	}
	samples, _, f, err := countSamples(data)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if samples < 4 {
		t.Errorf("%d sched_switch samples, want at least 4", samples)
	}
}
