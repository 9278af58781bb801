package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/pypylog"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/internal/trust"
)

// realPyPyLog is what Debian's pypy3 7.3.11 logged for
// internal/pypylog/testdata/bridges.py: three loops and seven bridges.
func realPyPyLog(t testing.TB) ([]byte, *pypylog.Log) {
	t.Helper()
	b, err := os.ReadFile("../pypylog/testdata/bridges.log")
	if err != nil {
		t.Fatal(err)
	}
	l, err := pypylog.Read(bytes.NewReader(b), pypylog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b, l
}

// ticksAsNanos is a clock whose TSC ticks are CLOCK_MONOTONIC's
// nanoseconds: the log's times are the samples'.
func ticksAsNanos(t testing.TB) *pypylog.Clock {
	c, err := pypylog.NewClock([]pypylog.Pair{{Tick: 1, Nanos: 1}, {Tick: 1 << 50, Nanos: 1 << 50}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPyPyLogFollowed: a PyPy log read while PyPy writes it (here cut
// mid-line, then completed) gives each loop and bridge a sequence
// number from its section's time on, in the code table; the numbered
// dump in the session names each one, for the pypy handler, as a
// report of the whole log names it.
func TestPyPyLogFollowed(t *testing.T) {
	log, want := realPyPyLog(t)
	path := filepath.Join(t.TempDir(), "pypy.log")
	cut := bytes.Index(log, []byte("bridge out of Guard")) + 7
	if err := os.WriteFile(path, log[:cut], 0o600); err != nil {
		t.Fatal(err)
	}
	j, sess := followedLog(t, path)
	j.clock, j.p.NSPID = ticksAsNanos(t), 4242
	if err := pollAll(j, 1, sess); err != nil {
		t.Fatal(err)
	}
	first := int(j.seq)
	if first == 0 || first >= len(want.Codes) {
		t.Fatalf("%d codes read of the first part, want some but not all %d", first, len(want.Codes))
	}
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(log[cut:]); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := pollAll(j, 2, sess); err != nil {
		t.Fatal(err)
	}
	if int(j.seq) != len(want.Codes) {
		t.Fatalf("%d codes read, the log has %d", j.seq, len(want.Codes))
	}
	for i, c := range want.Codes {
		mid := c.Start + (c.End-c.Start)/2
		if seq, ok := j.code.lookup(mid, c.Time); !ok || seq != uint64(i+1) {
			t.Errorf("code %d at its time: seq %d, %v; want %d", i, seq, ok, i+1)
		} else if e := j.code.find(mid, c.Time); e.load != c.Time {
			t.Errorf("code %d loaded at %d, its section's time is %d", i, e.load, c.Time)
		}
	}
	j.close()
	dump := readDump(t, sess)
	p := anon.Process{PID: 4242, NSPID: 4242, UID: trust.UnknownOwner, Comm: "pypy3",
		Embedded: map[string][]byte{path + ".seq": dump}, Kinds: map[string]string{path + ".seq": anon.PyPySeq}}
	r, h, errs := anon.Claim(anon.Builtins(), &p)
	if r == nil || h.Name() != "pypy" {
		t.Fatalf("the numbered dump is not claimed by the pypy handler: %v", errs)
	}
	names := want.Names()
	for i, c := range want.Codes {
		if s, ok := r.(anon.SeqResolver).ResolveSeq(c.Start+(c.End-c.Start)/2, uint64(i+1)); !ok || s.Name != names[i] {
			t.Errorf("code %d: %q, %v; want %q", i, s.Name, ok, names[i])
		}
	}
	if !strings.Contains(strings.Join(names, " "), "bridge 1 of loop") {
		t.Errorf("no bridge named by its loop in %q", names)
	}
}

// TestPyPyLogRewritten: a log written anew under the daemon (a new
// PyPy with the pid truncating it) is not followed further: its new
// loops would not be the ones numbered.
func TestPyPyLogRewritten(t *testing.T) {
	log, _ := realPyPyLog(t)
	path := filepath.Join(t.TempDir(), "pypy.log")
	if err := os.WriteFile(path, log, 0o600); err != nil {
		t.Fatal(err)
	}
	j, sess := followedLog(t, path)
	if err := pollAll(j, 1, sess); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, log[:100], 0o600); err != nil {
		t.Fatal(err)
	}
	var b *errBound
	if err := pollAll(j, 2, sess); err == nil || !errors.As(err, &b) || j.bound == nil {
		t.Errorf("a log written anew: %v, bound %v; want a bound met", err, j.bound)
	}
}

// TestImportPyPy: jitprof import of a recording that embeds a PyPy log
// and the TSC calibration keys each sample in a loop by the code live
// at its time, as the daemon would have, and the session names them.
func TestImportPyPy(t *testing.T) {
	log, want := realPyPyLog(t)
	const pid = 4243
	// TSC ticks are nanoseconds; the log's JIT memory is the recording's
	// anonymous mapping, moved.
	shift := uint64(jitStart) - want.Codes[0].Block&^0xffff
	var lines []string
	for _, l := range strings.SplitAfter(string(log), "\n") {
		lines = append(lines, moveAddrs(l, shift))
	}
	moved := strings.Join(lines, "")
	l, err := pypylog.Read(strings.NewReader(moved), pypylog.Options{})
	if err != nil || len(l.Codes) != len(want.Codes) || l.Codes[0].Start != want.Codes[0].Start+shift {
		t.Fatalf("the moved log: %v", err)
	}
	var samples [][2]uint64
	last := uint64(0)
	for _, c := range l.Codes {
		samples = append(samples, [2]uint64{c.Start + 1, c.Time + 10})
		last = max(last, c.Time)
	}
	// PyPy frees the first loop and assembles another at its address,
	// after all the others: the first loop's sample, before, keeps its
	// number, the one after gets the new loop's. Only the log's times on
	// the samples' clock (the TSC calibration) tell them apart.
	c0, again := l.Codes[0], last+1000
	moved += fmt.Sprintf("[%x] {jit-backend-addr\nLoop 99 (g;/x.py:1-2~#0 FOR_ITER) has address %#x to %#x\n[%x] jit-backend-addr}\n", again, c0.Start, c0.End, again+1)
	samples = append(samples, [2]uint64{c0.Start + 1, again + 10})
	f := writeRecording(t, pid, samples, []jitbundle.Entry{
		{PID: pid, Kind: jitbundle.KindPyPy, Path: "/tmp/pypy.log", MTime: -1, Data: []byte(moved)},
		{PID: pid, Kind: jitbundle.KindTSC, Path: jitbundle.TSCPath, MTime: -1, Data: jitbundle.EncodeTSC([]jitbundle.TSCPair{{TSC: 1, Nanos: 1}, {TSC: 1 << 50, Nanos: 1 << 50}})},
	})
	dir := t.TempDir()
	res, err := Import(f, dir, "", sampledb.SeparateNone)
	if err != nil {
		t.Fatal(err)
	}
	if res.Samples != uint64(len(samples)) || res.JITProcesses != 1 {
		t.Errorf("imported %d samples, %d JIT processes; want %d, 1", res.Samples, res.JITProcesses, len(samples))
	}
	spec, _ := sampledb.ParseSpec(nil)
	sel, err := sampledb.Select(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	got := map[[2]uint64]uint64{}
	for _, s := range sel.Files {
		r, err := sampledb.Open(dir, s)
		if err != nil {
			t.Fatal(err)
		}
		for e := range r.Entries() {
			got[[2]uint64{e.Key1, e.Key2}] += e.Count
		}
		r.Close()
	}
	for i, c := range l.Codes {
		if k := [2]uint64{c.Start + 1 - jitStart, uint64(i + 1)}; got[k] != 1 {
			t.Errorf("code %d: %d samples keyed (%#x, seq %d), want 1: %v", i, got[k], k[0], k[1], got)
		}
	}
	if k := [2]uint64{c0.Start + 1 - jitStart, uint64(len(l.Codes) + 1)}; got[k] != 1 {
		t.Errorf("the loop assembled again at code 0's address: %d samples keyed (%#x, seq %d), want 1", got[k], k[0], k[1])
	}
	if _, err := os.Stat(filepath.Join(sampledb.JITDir(dir, sampledb.Current, pid), pypySeqFile)); err != nil {
		t.Errorf("the session has no numbered dump of the log: %v", err)
	}
}

// moveAddrs adds shift to every 0x7f... address of a log line.
func moveAddrs(line string, shift uint64) string {
	var out strings.Builder
	for {
		i := strings.Index(line, "0x7f")
		if i < 0 {
			out.WriteString(line)
			return out.String()
		}
		out.WriteString(line[:i])
		j := i + 2
		for j < len(line) && strings.IndexByte("0123456789abcdef", line[j]) >= 0 {
			j++
		}
		var v uint64
		for _, c := range line[i+2 : j] {
			v = v<<4 | uint64(strings.IndexRune("0123456789abcdef", c))
		}
		out.WriteString("0x" + strconv.FormatUint(v+shift, 16))
		line = line[j:]
	}
}

// TestPyPyReusedAddress: PyPy frees a loop's code and assembles another
// loop at the same address: each sample is keyed by the loop live at its
// time (the log's TSC stamps on the samples' clock), and the session's
// numbered dump names each by its number, so the two are kept apart.
func TestPyPyReusedAddress(t *testing.T) {
	log := "[1000] {jit-backend-addr\nLoop 1 (f;/x.py:1-2~#0 FOR_ITER) has address 0x7f0000001000 to 0x7f0000001400 (bootstrap 0x7f0000001000)\n[1001] jit-backend-addr}\n" +
		"[5000] {jit-backend-addr\nLoop 2 (g;/x.py:5-6~#0 FOR_ITER) has address 0x7f0000001000 to 0x7f0000001200 (bootstrap 0x7f0000001000)\n[5001] jit-backend-addr}\n"
	path := filepath.Join(t.TempDir(), "pypy.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	j, sess := followedLog(t, path)
	j.clock, j.p.NSPID = ticksAsNanos(t), 4242
	if err := pollAll(j, 6000, sess); err != nil {
		t.Fatal(err)
	}
	j.close()
	dump := readDump(t, sess)
	p := anon.Process{PID: 4242, NSPID: 4242, UID: trust.UnknownOwner, Comm: "pypy3",
		Embedded: map[string][]byte{path + ".seq": dump}, Kinds: map[string]string{path + ".seq": anon.PyPySeq}}
	r, _, errs := anon.Claim(anon.Builtins(), &p)
	if r == nil {
		t.Fatalf("not claimed: %v", errs)
	}
	for _, tc := range []struct {
		at, seq uint64
		name    string
	}{{0x3000, 1, "f [loop 1]"}, {0x6000, 2, "g [loop 2]"}} { // the log's stamps are hexadecimal
		seq, ok := j.code.lookup(0x7f0000001100, tc.at)
		if !ok || seq != tc.seq {
			t.Errorf("a sample at %d: seq %d, %v; want %d", tc.at, seq, ok, tc.seq)
		}
		if s, ok := r.(anon.SeqResolver).ResolveSeq(0x7f0000001100, seq); !ok || s.Name != tc.name {
			t.Errorf("seq %d is named %q, %v; want %q", seq, s.Name, ok, tc.name)
		}
	}
}

// fakePyPy makes a /proc for test process 4242, a pypy3 of this test's
// user started with environ, working in cwd, whose descriptor 3 is fd3;
// status's Uid line and root's target as given.
func fakePyPy(t *testing.T, environ, cwd, fd3, uidLine, rootLink string) linux.Proc {
	t.Helper()
	root := t.TempDir()
	uid := strconv.Itoa(os.Getuid())
	if uidLine == "" {
		uidLine = uid + "\t" + uid + "\t" + uid + "\t" + uid
	}
	dir := filepath.Join(root, "4242")
	for name, data := range map[string]string{
		"status":  "Name:\tpypy3\nTgid:\t4242\nPPid:\t1\nUid:\t" + uidLine + "\nGid:\t0\t0\t0\t0\nNSpid:\t4242\n",
		"stat":    "4242 (pypy3) S 1 " + strings.Repeat("0 ", 17) + "98765 0 0\n",
		"comm":    "pypy3\n",
		"environ": "HOME=/root\x00" + environ + "\x00",
	} {
		if err := os.MkdirAll(filepath.Join(dir, "ns"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{filepath.Join(dir, "fd"), filepath.Join(root, "self", "ns")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"4242/cwd": cwd, "4242/root": rootLink, "4242/fd/3": fd3,
		"4242/ns/mnt": "/proc/self/ns/mnt", "self/ns/mnt": "/proc/self/ns/mnt",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return linux.Proc{Root: root}
}

// TestPyPyLogFound: the daemon follows the log PYPYLOG names (relative to
// the working directory, %d its pid) only if the process holds it open:
// a child forked from a PyPy has its parent's PYPYLOG but not its log.
// Nor does it take the path of a set-id process's PYPYLOG. A chrooted
// process's path is resolved in its root, or relative in its working
// directory, through /proc/PID/root or /proc/PID/cwd, never above them
// or through a symlink.
func TestPyPyLogFound(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "pypy.log")
	pidLog := filepath.Join(dir, "pypy-4242.log")
	other := filepath.Join(dir, "other")
	// A chroot: jail/work/pypy.log is /work/pypy.log inside it, and
	// jail/work/link a symlink to it.
	jail := filepath.Join(dir, "jail")
	jailed := filepath.Join(jail, "work", "pypy.log")
	if err := os.MkdirAll(filepath.Dir(jailed), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{log, pidLog, other, jailed} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("pypy.log", filepath.Join(jail, "work", "link")); err != nil {
		t.Fatal(err)
	}
	env := "PYPYLOG=jit-backend-addr:" + log
	uid := strconv.Itoa(os.Getuid())
	for _, tc := range []struct {
		name                         string
		environ, cwd, fd3, uid, root string
		want                         string // the log followed
		wantProc                     string // the log followed, in the test's /proc
		notHeld, refused             bool
	}{
		{name: "unset", environ: "PYPY=" + log, cwd: "/", fd3: log, root: "/"},
		{name: "cwd deleted", environ: "PYPYLOG=jit-backend-addr:pypy.log", cwd: dir + " (deleted)", fd3: log, root: "/"},
		{name: "directory", environ: "PYPYLOG=jit-backend-addr:" + dir, cwd: "/", fd3: dir, root: "/", refused: true},
		{name: "held", environ: env, cwd: "/", fd3: log, root: "/", want: log},
		{name: "relative", environ: "PYPYLOG=jit-backend-addr,jit-log-opt:pypy.log", cwd: dir, fd3: log, root: "/", want: log},
		{name: "pid", environ: "PYPYLOG=jit-backend-addr:" + filepath.Join(dir, "pypy-%d.log"), cwd: "/", fd3: pidLog, root: "/", want: pidLog},
		{name: "forked child", environ: env, cwd: "/", fd3: other, root: "/", notHeld: true},
		{name: "chrooted, gone", environ: env, cwd: "/", fd3: log, root: "/srv/jail"},
		{name: "chrooted", environ: "PYPYLOG=jit-backend-addr:/work/pypy.log", cwd: "/", fd3: jailed, root: jail, wantProc: "4242/root/work/pypy.log"},
		{name: "chrooted, relative", environ: "PYPYLOG=jit-backend-addr:pypy.log", cwd: filepath.Dir(jailed), fd3: jailed, root: jail, wantProc: "4242/cwd/pypy.log"},
		{name: "chrooted, a host path", environ: env, cwd: "/", fd3: log, root: jail},
		{name: "chrooted, above its root", environ: "PYPYLOG=jit-backend-addr:/../" + log, cwd: "/", fd3: log, root: jail},
		{name: "chrooted, above its directory", environ: "PYPYLOG=jit-backend-addr:../work/pypy.log", cwd: filepath.Dir(jailed), fd3: jailed, root: jail},
		{name: "chrooted, a symlink", environ: "PYPYLOG=jit-backend-addr:/work/link", cwd: "/", fd3: jailed, root: jail, refused: true},
		{name: "set-uid", environ: env, cwd: "/", fd3: log, uid: "1\t" + uid + "\t" + uid + "\t" + uid, root: "/"},
		{name: "standard error", environ: "PYPYLOG=jit-backend-addr:-", cwd: "/", fd3: log, root: "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc := fakePyPy(t, tc.environ, tc.cwd, tc.fd3, tc.uid, tc.root)
			j := &jitProc{pid: 4242, proc: proc}
			defer j.close()
			now := time.Now()
			found, err := j.find(now, func(uint32) []anon.Mapping { return nil })
			if tc.notHeld != errors.Is(err, errNotHeld) || tc.refused != errors.Is(err, trust.ErrUntrusted) || !tc.notHeld && !tc.refused && err != nil {
				t.Fatalf("find: %v", err)
			}
			if tc.wantProc != "" {
				tc.want = filepath.Join(proc.Root, tc.wantProc)
			}
			if got := map[bool]string{true: j.path}[found]; got != tc.want || found && j.handler != "pypy" {
				t.Fatalf("followed %s %q, want %q", j.handler, got, tc.want)
			}
			if tc.notHeld {
				// Said once, then not looked at again.
				if found, err := j.find(now.Add(2*lookAgain), func(uint32) []anon.Mapping { return nil }); found || err != nil {
					t.Errorf("looked again: %v, %v", found, err)
				}
			}
		})
	}
}

// TestPyPyLogPartialLine: a last line without its newline is not read
// again at every poll, only once the log grows.
func TestPyPyLogPartialLine(t *testing.T) {
	log, want := realPyPyLog(t)
	path := filepath.Join(t.TempDir(), "pypy.log")
	if err := os.WriteFile(path, append(slices.Clip(log), bytes.Repeat([]byte("x"), 200<<10)...), 0o600); err != nil {
		t.Fatal(err)
	}
	j, sess := followedLog(t, path)
	for i := range 3 {
		w := work{1 << 62, 1 << 62}
		if err := j.poll(uint64(i+1), &w, unbounded, sess); err != nil {
			t.Fatal(err)
		}
		if used := int64(1<<62) - w.bytes; i > 0 && used != 0 {
			t.Errorf("poll %d of a log that did not grow read %d bytes", i+1, used)
		}
	}
	if int(j.seq) != len(want.Codes) {
		t.Fatalf("%d codes read, want %d", j.seq, len(want.Codes))
	}
	// A new session (save, reset) reads the log again from its start,
	// whether it grew or not.
	in := &Ingest{pids: map[uint32]*pidState{4242: {jit: j}}}
	in.SessionChanged()
	seq := j.seq
	if err := pollAll(j, 4, sess); err != nil || j.seq != seq+uint64(len(want.Codes)) {
		t.Fatalf("after a new session: %v, %d codes numbered; want %d more", err, j.seq-seq, len(want.Codes))
	}
	a, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.WriteString("\n"); err != nil {
		t.Fatal(err)
	}
	if err := pollAll(j, 5, sess); err != nil || j.off != int64(len(log)+200<<10+1) {
		t.Errorf("after the line ended: %v, read to %d; want to %d", err, j.off, len(log)+200<<10+1)
	}
}

// TestPyPyLogPathReplaced: once the daemon holds the log PyPy holds, a
// file put at its path (renamed over it, or the log deleted and made
// anew) changes nothing: PyPy writes to its descriptor, which is the
// daemon's.
func TestPyPyLogPathReplaced(t *testing.T) {
	log, want := realPyPyLog(t)
	cut := bytes.Index(log, []byte("bridge out of Guard")) + 7
	for _, early := range []bool{true, false} {
		t.Run(map[bool]string{true: "before a read", false: "after"}[early], func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "pypy.log")
			if err := os.WriteFile(path, log[:cut], 0o600); err != nil {
				t.Fatal(err)
			}
			j, sess := followedLog(t, path)
			a, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if !early {
				if err := pollAll(j, 1, sess); err != nil || j.seq == 0 {
					t.Fatalf("first part: %d codes, %v", j.seq, err)
				}
			}
			if err := os.Rename(path, filepath.Join(dir, "old.log")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte("another\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Write(log[cut:]); err != nil {
				t.Fatal(err)
			}
			if err := pollAll(j, 2, sess); err != nil || int(j.seq) != len(want.Codes) {
				t.Errorf("%d codes read, %v; want %d, no error", j.seq, err, len(want.Codes))
			}
		})
	}
}

// forkingPyPy compiles a loop, so that its log is open, then forks: the
// child compiles its own, and each writes its pid to ARGV[1].parent and
// .child, and waits to be killed.
const forkingPyPy = `
import os, sys, time
def f(n):
    s = 0
    for i in range(n):
        s += i
    return s
f(200000)
pid = os.fork()
me = "child" if pid == 0 else "parent"
f(300000)
with open(sys.argv[1] + "." + me + ".tmp", "w") as out:
    out.write(str(os.getpid()))
os.rename(sys.argv[1] + "." + me + ".tmp", sys.argv[1] + "." + me)
time.sleep(120)
`

// TestPyPyForkedChild: a real PyPy that forks, its PYPYLOG without %d:
// the daemon follows the parent's log for the parent, and refuses it
// for the child, which has the parent's PYPYLOG in /proc/PID/environ but
// not its log open (RPython's debug_print.c closes it in the child).
func TestPyPyForkedChild(t *testing.T) {
	pypy := perftest.Need(t, "pypy3")
	dir := t.TempDir()
	script, log, pids := filepath.Join(dir, "fork.py"), filepath.Join(dir, "pypy.log"), filepath.Join(dir, "pid")
	if err := os.WriteFile(script, []byte(forkingPyPy), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pypy, script, pids)
	cmd.Env = append(os.Environ(), "PYPYLOG=jit-backend-addr:"+log)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pidOf := map[string]int{}
	defer func() {
		for _, pid := range pidOf {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		cmd.Process.Kill()
		cmd.Wait()
	}()
	// Bounded by the JIT's compiles on a loaded machine, not a count.
	for deadline := time.Now().Add(2 * time.Minute); len(pidOf) < 2 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, who := range []string{"parent", "child"} {
			if b, err := os.ReadFile(pids + "." + who); err == nil {
				pidOf[who], _ = strconv.Atoi(string(b))
			}
		}
	}
	if pidOf["parent"] == 0 || pidOf["child"] == 0 {
		t.Fatalf("the PyPy wrote pids %v in 2 minutes", pidOf)
	}
	for who, pid := range pidOf {
		j := &jitProc{pid: uint32(pid)}
		found, err := j.find(time.Now(), func(uint32) []anon.Mapping { return nil })
		j.close()
		switch who {
		case "parent":
			if !found || j.path != log || err != nil {
				t.Errorf("the parent's log: found %v at %q, %v; want %s", found, j.path, err, log)
			}
		case "child":
			if found || !errors.Is(err, errNotHeld) {
				t.Errorf("the child: found %v at %q, %v; want the parent's log refused, not open in it", found, j.path, err)
			}
		}
	}
}

// TestPyPyLogMalformed: a malformed log meets a bound that says it is
// malformed: the bound wraps pypylog.ErrFormat.
func TestPyPyLogMalformed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pypy.log")
	if err := os.WriteFile(path, []byte("[1] {jit-backend-addr\n[2] gc-minor}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	j, sess := followedLog(t, path)
	err := pollAll(j, 1, sess)
	var b *errBound
	if !errors.As(err, &b) || !errors.Is(err, pypylog.ErrFormat) || j.bound == nil {
		t.Errorf("a malformed log: %v, bound %v; want a bound wrapping pypylog.ErrFormat", err, j.bound)
	}
}

// readDump reads the numbered dump of a followed log from its session.
func readDump(t *testing.T, sess func() (*os.Root, error)) []byte {
	t.Helper()
	root, _ := sess()
	dump, err := root.ReadFile(pypySeqFile)
	if err != nil {
		t.Fatal(err)
	}
	return dump
}

// followedLog is a PyPy process's log at path as the daemon follows it
// (opened, a Follower, an owner the tests do not check), closed at the
// test's end, and a session directory for pollAll.
func followedLog(t *testing.T, path string) (*jitProc, func() (*os.Root, error)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	j := &jitProc{pid: 4242, handler: "pypy", path: path, f: f, pypy: pypylog.NewFollower(), p: anon.Process{PID: 4242, UID: trust.UnknownOwner}}
	t.Cleanup(j.close)
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return j, func() (*os.Root, error) { return root, nil }
}

// TestPyPyInContainer: a real PyPy in a mount namespace of its own (as
// in a container), whose log is on a file system the host does not see
// at that path: the daemon finds the log through /proc/PID/root, checks
// the process holds it open and follows it as it grows. unshare -r makes
// the namespaces without privilege (the process is the test's user on
// the host, as the log's owner is).
func TestPyPyInContainer(t *testing.T) {
	pypy := perftest.Need(t, "pypy3")
	unshare := perftest.Need(t, "unshare")
	dir := t.TempDir()
	hidden, script, pidFile := filepath.Join(dir, "hidden"), filepath.Join(dir, "gen.py"), filepath.Join(dir, "pid")
	if err := os.Mkdir(hidden, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte(generatingPyPy), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(hidden, "pypy.log")
	cmd := exec.Command(unshare, "-r", "-m", "sh", "-c", `mount -t tmpfs none "$1" && exec "$2" "$3" "$4"`, "sh", hidden, pypy, script, pidFile)
	cmd.Env = append(os.Environ(), "PYPYLOG=jit-backend-addr,jit-log-opt:"+log)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	pid := 0
	// Bounded by a loaded machine's start of PyPy, not a count.
	for deadline := time.Now().Add(2 * time.Minute); pid == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(string(b))
		}
	}
	if pid == 0 {
		t.Fatal("the PyPy wrote no pid in 2 minutes")
	}
	if _, err := os.Stat(log); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the host sees the PyPy's log at its path (%v): not another mount namespace", err)
	}
	j := &jitProc{pid: uint32(pid)}
	defer j.close()
	found, err := j.find(time.Now(), func(uint32) []anon.Mapping { return nil })
	if want := fmt.Sprintf("/proc/%d/root%s", pid, log); !found || err != nil || j.path != want {
		t.Fatalf("found %v at %q (%v); want %s", found, j.path, err, want)
	}
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	// PyPy writes its log through stdio's buffer: the loops come as it
	// fills, bounded by time on a loaded machine.
	for deadline := time.Now().Add(2 * time.Minute); j.code.len() == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		w := work{1 << 62, 1 << 62}
		if err := j.poll(uint64(time.Now().UnixNano()), &w, unbounded, func() (*os.Root, error) { return root, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if j.code.len() == 0 {
		t.Fatalf("no loop read from the log in 2 minutes (%d bytes read)", j.off)
	}
}

// generatingPyPy writes its pid to argv[1], then compiles new loops
// without end, so that its log grows past stdio's buffer.
const generatingPyPy = `
import os, sys
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
i = 0
while True:
    ns = {}
    exec("def f%d(n):\n    s = 0\n    for k in range(n):\n        s += k * %d %% 7\n    return s\n" % (i, i), ns)
    ns["f%d" % i](20000)
    i += 1
`
