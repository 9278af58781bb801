package ingest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/trust"

	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/record"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/perfdata"
)

const (
	appStart  = 0x400000
	appPgoff  = 0x1000
	jitStart  = 0x7f0000000000
	jitLen    = 0x10000
	testPID   = 100
	kernelTop = 0xffffffff81000000
)

// newTestIngest is an Ingest over a session in a temporary directory,
// with one process: an executable mapped at appStart and JIT code in an
// anonymous mapping at jitStart, two generations at one address.
func newTestIngest(t testing.TB) (*Ingest, *sampledb.DB, string) {
	dir := t.TempDir()
	db, err := sampledb.Create(dir, sampledb.Options{Events: []sampledb.Event{{Name: "cpu-clock", Count: 1000, Freq: true}}, Separate: sampledb.SeparateThread})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tr := process.New()
	tr.SetComm(testPID, testPID, 0, "app", false)
	tr.Map(process.Mapping{PID: testPID, Start: appStart, End: appStart + 0x100000, Pgoff: appPgoff, Path: "/usr/bin/app", Exec: true})
	tr.Map(process.Mapping{PID: testPID, Start: jitStart, End: jitStart + jitLen, Path: "//anon", Anon: true, Exec: true})
	in := New(db, tr, 0)
	in.SetExe(testPID, "/usr/bin/app")
	j := in.pid(testPID).jit
	j.handler = "jitlog"
	j.code.load(jitStart, 0x100, 7, t0)
	j.code.load(jitStart+0x100, 0x100, 8, t0)
	j.code.load(jitStart, 0x100, 9, t0+1000) // re-generated at the same address
	in.BeginRound()
	in.pid(testPID).polled = in.round // no JIT data to read: the table is all
	return in, db, dir
}

// t0 is the tests' time 0: tables forget code that ended 10 s before
// the clock.
var t0 = monotonic()

func sample(ip, time uint64, kernel bool) *perfdata.Sample {
	s := &perfdata.Sample{IP: ip}
	s.PID, s.TID, s.CPU, s.Time = testPID, testPID+1, 1, t0+time
	s.Misc = perfdata.MiscUser
	if kernel {
		s.Misc = perfdata.MiscKernel
	}
	return s
}

// TestIngest: samples reach the files their image, thread and offset
// say, JIT code keyed by (offset, sequence number of the code live at
// the sample's time).
func TestIngest(t *testing.T) {
	in, db, dir := newTestIngest(t)
	for _, s := range []*perfdata.Sample{
		sample(appStart+0x10, 5, false),
		sample(appStart+0x10, 6, false),
		sample(jitStart+0x20, 500, false),  // gen 7
		sample(jitStart+0x20, 1500, false), // gen 9, same address
		sample(jitStart+0x120, 1500, false),
		sample(kernelTop+0x42, 7, true),
		sample(0x10, 7, false), // in no mapping
	} {
		in.Add(s)
	}
	in.EndRound()
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if in.Unresolved != 1 || in.Errors != 0 {
		t.Errorf("unresolved %d, errors %d, want 1, 0", in.Unresolved, in.Errors)
	}
	spec, _ := sampledb.ParseSpec(nil)
	sel, err := sampledb.Select(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[[2]uint64]uint64{}
	for _, f := range sel.Files {
		r, err := sampledb.Open(dir, f)
		if err != nil {
			t.Fatal(err)
		}
		m := map[[2]uint64]uint64{}
		for e := range r.Entries() {
			m[[2]uint64{e.Key1, e.Key2}] = e.Count
		}
		r.Close()
		got[f.Key.Dep.String()+" app="+f.Key.App.Name] = m
		if f.Key.TGID != testPID || f.Key.TID != testPID+1 {
			t.Errorf("%s: tgid %d tid %d, want %d %d", f.Name, f.Key.TGID, f.Key.TID, testPID, testPID+1)
		}
	}
	want := map[string]map[[2]uint64]uint64{
		"/usr/bin/app app=/usr/bin/app":                                              {{0x10 + appPgoff, 0}: 2},
		"jit:jitlog (tgid:100 range:0x7f0000000000-0x7f0000010000) app=/usr/bin/app": {{0x20, 7}: 1, {0x20, 9}: 1, {0x120, 8}: 1},
		"vmlinux app=vmlinux":                                                        {{kernelTop + 0x42, 0}: 1},
	}
	if len(got) != len(want) {
		t.Errorf("files: %v, want %v", got, want)
	}
	for k, w := range want {
		for key, n := range w {
			if got[k][key] != n {
				t.Errorf("%s: key %#x has %d samples, want %d (file: %v)", k, key, got[k][key], n, got[k])
			}
		}
	}
}

// TestIngestArcs: with CallGraph, each caller-callee pair of a
// callchain is an arc in a {cg} file, keyed by the caller's and the
// callee's offsets, and an end in JIT code keeps the sequence number of
// the code live there at the sample's time.
func TestIngestArcs(t *testing.T) {
	in, db, dir := newTestIngest(t)
	in.CallGraph = true
	// The app calls JIT code (gen 9 at 1500) that calls the app again;
	// the kernel's part of the chain is the leaf's own.
	s := sample(kernelTop+0x42, 1500, true)
	s.Callchain = []uint64{resolve.ContextKernel, kernelTop + 0x42, resolve.ContextUser, appStart + 0x500, jitStart + 0x30, appStart + 0x80}
	in.Add(s)
	in.EndRound()
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	spec, _ := sampledb.ParseSpec(nil)
	sel, err := sampledb.Select(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][4]uint64{}
	for _, f := range sel.Files {
		if f.Key.Kind() != sampledb.KeyCallGraph {
			continue
		}
		r, err := sampledb.Open(dir, f)
		if err != nil {
			t.Fatal(err)
		}
		for e := range r.Entries() {
			if e.Count != 1 {
				t.Errorf("%s: count %d, want 1", f.Name, e.Count)
			}
			from, seqFrom := sampledb.SplitArcEnd(f.Key.Dep, e.Key1)
			to, seqTo := sampledb.SplitArcEnd(f.Key.CG, e.Key2)
			got[f.Key.Dep.Name+" -> "+f.Key.CG.Name] = [4]uint64{from, seqFrom, to, seqTo}
		}
		r.Close()
	}
	// (caller offset, its sequence number, callee offset, its sequence number)
	want := map[string][4]uint64{
		"/usr/bin/app -> vmlinux": {0x500 + appPgoff, 0, kernelTop + 0x42, 0},
		"jitlog -> /usr/bin/app":  {0x30, 9, 0x500 + appPgoff, 0},
		"/usr/bin/app -> jitlog":  {0x80 + appPgoff, 0, 0x30, 9},
	}
	if len(got) != len(want) {
		t.Errorf("arcs %x, want %x", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %#x, want %#x", k, got[k], w)
		}
	}
}

// BenchmarkIngest is the daemon's hot path, a decoded sample to a count
// in a sample file's table in memory: the mapping, the image, the hash
// lookup of the file and of the key, and for a quarter of the samples,
// in JIT code, the lookup of the sequence number. Issue 13 asks 5
// million samples a second on one core (200 ns a sample).
func BenchmarkIngest(b *testing.B) {
	in, _, _ := newTestIngest(b)
	var ss []*perfdata.Sample
	for i := range 1024 {
		if i%4 == 3 {
			ss = append(ss, sample(jitStart+uint64(i*7)%0x200, 2000, false))
		} else {
			ss = append(ss, sample(appStart+uint64(i*97)%0x40000, 2000, false))
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		in.Add(ss[i&1023])
		i++
	}
	if in.Errors != 0 || in.Unresolved != 0 {
		b.Fatalf("errors %d, unresolved %d", in.Errors, in.Unresolved)
	}
}

// TestExecBeforeFork: the records of a round come CPU by CPU, so a
// child's exec (on the CPU it runs on) can be taken before its fork (on
// its parent's): the fork must not give it back its parent's executable,
// which named a node's JIT code "bash"'s.
func TestExecBeforeFork(t *testing.T) {
	in, _, _ := newTestIngest(t)
	const parent, child = 200, 201
	in.SetExe(parent, "/usr/bin/bash")
	attr := &perfdata.Attr{SampleType: perfdata.SampleTime}
	withTime := func(c *perfdata.Common, tm uint64) { c.Attr, c.Time = attr, tm }
	comm := &perfdata.Comm{PID: child, TID: child, Comm: "node"}
	comm.Misc = perfdata.MiscCommExec
	withTime(&comm.Common, 20)
	mmap := &perfdata.Mmap{PID: child, TID: child, Addr: 0x1000, Len: 0x1000, Filename: "/usr/bin/node"}
	withTime(&mmap.Common, 21)
	fork := &perfdata.Fork{PID: child, PPID: parent, TID: child, PTID: parent, ForkTime: 10}
	withTime(&fork.Common, 10)
	for _, order := range [][]perfdata.Record{{fork, comm, mmap}, {comm, mmap, fork}} {
		in.reset(child)
		delete(in.pids, child)
		in.lastState = nil
		for _, r := range order {
			in.Take(r)
		}
		if got := in.pid(child).exe; got != "/usr/bin/node" {
			t.Errorf("records taken in the order %T, %T, %T: the child runs %q, want /usr/bin/node", order[0], order[1], order[2], got)
		}
	}
	in.SetExe(child, "/usr/bin/bash") // /proc read before the exec
	if got := in.pid(child).exe; got != "/usr/bin/node" {
		t.Errorf("after SetExe from an older /proc read, the child runs %q", got)
	}
}

// TestForgetsExited: the tracker forgets a process a round after it
// exited, unless its pid was forked anew meanwhile.
func TestForgetsExited(t *testing.T) {
	in, _, _ := newTestIngest(t)
	exit := func(pid uint32) *perfdata.Exit { return &perfdata.Exit{PID: pid, TID: pid} }
	in.procs.Fork(300, testPID, 300, testPID, 1)
	in.procs.Fork(301, testPID, 301, testPID, 1)
	in.Take(exit(300))
	in.Take(exit(301))
	in.EndRound()
	if _, ok := in.procs.Process(300); !ok {
		t.Fatal("forgotten in the round it exited: a late sample would find nothing")
	}
	in.BeginRound()
	in.Take(&perfdata.Fork{PID: 301, PPID: testPID, TID: 301, PTID: testPID, ForkTime: 2}) // 301 again
	in.procs.Fork(301, testPID, 301, testPID, 2)
	in.EndRound()
	if _, ok := in.procs.Process(300); ok {
		t.Error("pid 300 is remembered a round after it exited")
	}
	if _, ok := in.procs.Process(301); !ok {
		t.Error("pid 301, forked anew, was forgotten with the process that had it before")
	}
	if _, ok := in.procs.Process(testPID); !ok {
		t.Error("the live process was forgotten")
	}
}

// TestLateSampleNamed: a JIT process's sample that comes a round after
// its exit (another CPU's ring, drained before the exit was written) is
// named as the process's samples were, by the generation live at its
// time, and the process is let go of at the end of that round, its
// state and its mappings.
func TestLateSampleNamed(t *testing.T) {
	in, db, dir := newTestIngest(t)
	forgotten := 0
	in.Forget = func(pid uint32) {
		if pid == testPID {
			forgotten++
		}
	}
	in.Add(sample(jitStart+0x20, 1400, false))
	in.Take(&perfdata.Exit{PID: testPID, TID: testPID})
	in.EndRound()
	if in.pids[testPID] == nil || forgotten != 0 {
		t.Fatalf("let go of in the round it exited (forgotten %d times): a late sample finds nothing", forgotten)
	}
	in.BeginRound()
	in.Add(sample(jitStart+0x20, 1500, false)) // late
	in.EndRound()
	if in.pids[testPID] != nil || forgotten != 1 {
		t.Errorf("a round after its exit, the process is kept (forgotten %d times)", forgotten)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if in.Unresolved != 0 {
		t.Errorf("%d samples in no mapping, want 0", in.Unresolved)
	}
	spec, _ := sampledb.ParseSpec(nil)
	sel, err := sampledb.Select(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	got := map[[2]uint64]uint64{}
	for _, f := range sel.Files {
		r, err := sampledb.Open(dir, f)
		if err != nil {
			t.Fatal(err)
		}
		for e := range r.Entries() {
			if strings.HasPrefix(f.Key.Dep.String(), "jit:") {
				got[[2]uint64{e.Key1, e.Key2}] += e.Count
			}
		}
		r.Close()
	}
	if want := map[[2]uint64]uint64{{0x20, 9}: 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("JIT samples by (offset, generation): %v, want %v", got, want)
	}
}

// TestPidReusedAfterExit: a pid forked anew in the round after its
// process exited, by a parent the daemon knows nothing of, is not given
// the JIT data of the process that had it before.
func TestPidReusedAfterExit(t *testing.T) {
	in, _, _ := newTestIngest(t)
	in.Take(&perfdata.Exit{PID: testPID, TID: testPID})
	in.EndRound()
	in.BeginRound()
	in.Take(&perfdata.Fork{PID: testPID, PPID: 999, TID: testPID, PTID: 999, ForkTime: t0 + 5000})
	if st := in.pids[testPID]; st != nil && st.jit.handler != "" {
		t.Errorf("the new process with pid %d has the old one's %s data", testPID, st.jit.handler)
	}
	in.EndRound()
	if _, ok := in.procs.Process(testPID); !ok {
		t.Error("the new process was forgotten with the one that had its pid before")
	}
}

// TestIngestRoundBudget: the JIT data of all processes together gets a
// bounded amount of work a round, shared so that each progresses: two
// users flooding their jitdumps cannot make one round, nor the next,
// long. Rounds of 500 ms (a daemon sampling at a low rate) get five
// times a round of 100 ms's work, no more: the JIT data is followed at
// the same rate a second.
func TestIngestRoundBudget(t *testing.T) {
	for _, round := range []time.Duration{record.PollInterval, 500 * time.Millisecond} {
		t.Run(round.String(), func(t *testing.T) { testRoundBudget(t, round) })
	}
}

func testRoundBudget(t *testing.T, round time.Duration) {
	in, _, _ := newTestIngest(t)
	dir := t.TempDir()
	const n = 100_000
	var js []*jitProc
	for _, pid := range []uint32{501, 502} {
		path := filepath.Join(dir, fmt.Sprintf("jit-%d.dump", pid))
		writeLoads(t, path, pid, 0x1000, 0, n)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		j := in.pid(pid).jit
		j.handler, j.path, j.f = "jitdump", path, f
		j.p = anon.Process{PID: int(pid), NSPID: int(pid), UID: trust.UnknownOwner}
		js = append(js, j)
	}
	clock := uint64(1e9)
	in.now = func() uint64 { return clock }
	rounds := 0
	perRound := int64(round) * recordRate / 1e9
	for js[0].off < js[0].size || js[1].off < js[1].size || rounds == 0 {
		clock += uint64(round)
		before := js[0].code.nextID + js[1].code.nextID
		in.BeginRound()
		rounds++
		applied := js[0].code.nextID + js[1].code.nextID - before
		if int64(applied) > perRound {
			t.Fatalf("round %d applied %d records, bound %d", rounds, applied, perRound)
		}
		if rounds == 1 && (js[0].code.nextID == 0 || js[1].code.nextID == 0) {
			t.Errorf("the first round applied %d and %d records: one process waits for the other", js[0].code.nextID, js[1].code.nextID)
		}
		if int64(rounds) > 4*n/perRound+10 {
			t.Fatalf("%d rounds and the dumps are not read: %d and %d records", rounds, js[0].code.nextID, js[1].code.nextID)
		}
	}
	for _, j := range js {
		if seq, _ := j.code.lookup(0x1008, 10*n); seq != n {
			t.Errorf("pid %d: the live code is generation %d, want %d", j.pid, seq, n)
		}
	}
}

// TestShortLivedAnon: 5,000 short-lived processes of one application
// running anonymous code that no JIT data names (it left 4,952 sample
// files) count into one file, the application's, not one each.
func TestShortLivedAnon(t *testing.T) {
	dir := t.TempDir()
	db, err := sampledb.Create(dir, sampledb.Options{Events: []sampledb.Event{{Name: "cpu-clock", Count: 1000, Freq: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	in := New(db, process.New(), 0)
	const n = 5000
	for i := range uint32(n) {
		pid := 3_900_000 + i
		start := uint64(0x7e0000000000) + uint64(i)<<20
		in.procs.Map(process.Mapping{PID: pid, Start: start, End: start + 0x10000, Path: "//anon", Anon: true, Exec: true})
		in.SetExe(pid, "/usr/bin/spawner")
		s := &perfdata.Sample{IP: start + uint64(i%100)*16}
		s.PID, s.TID, s.Time, s.Misc = pid, pid, t0+uint64(i), perfdata.MiscUser
		in.Add(s)
		in.Take(&perfdata.Exit{PID: pid, TID: pid})
		in.EndRound()
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	spec, _ := sampledb.ParseSpec(nil)
	sel, err := sampledb.Select(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	total := uint64(0)
	for _, f := range sel.Files {
		r, err := sampledb.Open(dir, f)
		if err != nil {
			t.Fatal(err)
		}
		for e := range r.Entries() {
			total += e.Count
		}
		r.Close()
	}
	if len(sel.Files) > 2 || total != n {
		t.Errorf("%d sample files with %d samples, want one file (the spawner's anonymous memory) with %d", len(sel.Files), total, n)
	}
}

// TestFindRefusalReported: a JIT data file refused when the daemon first
// looks for a process's data (here a link at /tmp/perf-PID.map) is said
// in status, not dropped.
func TestFindRefusalReported(t *testing.T) {
	in, _, _ := newTestIngest(t)
	const pid = 3_950_001
	mp := fmt.Sprintf("/tmp/perf-%d.map", pid)
	target := filepath.Join(t.TempDir(), "map")
	os.WriteFile(target, []byte("7e0000000000 10 f\n"), 0o600)
	if err := os.Symlink(target, mp); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(mp)
	in.procs.Map(process.Mapping{PID: pid, Start: 0x7e0000000000, End: 0x7e0000010000, Path: "//anon", Anon: true, Exec: true})
	s := &perfdata.Sample{IP: 0x7e0000000004}
	s.PID, s.TID, s.Time, s.Misc = pid, pid, t0, perfdata.MiscUser
	in.Add(s)
	if err := in.JITErrors[pid]; !errors.Is(err, trust.ErrUntrusted) {
		t.Errorf("the refused map: %v, want a refusal in the process's errors", err)
	}
}

// TestResyncAfterLost: a sample of a running process in a mapping whose
// MMAP the kernel lost is placed once a loss was counted, its mappings
// read again from /proc (here the test's own process, whose code no
// record told the tracker of); without a loss since, /proc is not read
// again for a sample in no mapping.
func TestResyncAfterLost(t *testing.T) {
	db, err := sampledb.Create(t.TempDir(), sampledb.Options{Events: []sampledb.Event{{Name: "cpu-clock", Count: 1000, Freq: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	in := New(db, process.New(), 0)
	in.Resync = true
	pid := uint32(os.Getpid())
	pc := uint64(reflect.ValueOf(TestResyncAfterLost).Pointer())
	s := &perfdata.Sample{IP: pc}
	s.PID, s.TID, s.Time, s.Misc = pid, pid, t0, perfdata.MiscUser
	in.Add(s)
	if in.Unresolved != 1 || in.Resynced != 0 {
		t.Fatalf("before a loss: %d unresolved, %d resynced; want 1, 0", in.Unresolved, in.Resynced)
	}
	in.Handle(&perfdata.Lost{Lost: 3})
	s.Time += 10
	in.Add(s)
	exe, _ := os.Readlink("/proc/self/exe")
	if in.Unresolved != 1 || in.Resynced != 1 {
		t.Fatalf("after a loss: %d unresolved, %d resynced; want 1, 1", in.Unresolved, in.Resynced)
	}
	if m := in.pid(pid).last; m == nil || m.Path != exe {
		t.Errorf("the sample is placed in %+v, want the test's executable %s", m, exe)
	}
	s.IP = 0x10 // no mapping, in /proc either
	in.Add(s)
	in.Add(s)
	if in.Unresolved != 3 || in.Resynced != 1 || in.ResyncReads != 1 {
		t.Errorf("no loss since: %d unresolved, %d reads, %d resynced; want 3, 1, 1", in.Unresolved, in.ResyncReads, in.Resynced)
	}
}

// countedMaps counts the reads of a process's mappings, which it has
// none of, started at start (ticks since boot, 0 unknown).
type countedMaps struct {
	start       uint64
	maps, stats int
}

func (c *countedMaps) Maps(int) ([]linux.Mapping, error) { c.maps++; return nil, nil }
func (c *countedMaps) Stat(int) (uint64, byte, error)    { c.stats++; return c.start, 'S', nil }

// TestResyncBounded: mappings are read again only for a sample's own
// address (not its callers', which can be any word of a stack), once a
// loss, once a second of sample time a process, at most maxResyncs
// processes a round, and not for a process that started after the
// sample (its pid reused).
func TestResyncBounded(t *testing.T) {
	in, _, _ := newTestIngest(t)
	in.Resync, in.CallGraph = true, true
	reads := &countedMaps{}
	in.maps = reads
	s := &perfdata.Sample{IP: appStart + 0x10, Callchain: []uint64{resolve.ContextUser, appStart + 0x10, 0x20, 0x30}}
	s.PID, s.TID, s.Time, s.Misc = testPID, testPID, t0, perfdata.MiscUser
	in.Handle(&perfdata.Lost{Lost: 1})
	in.Add(s)
	if reads.stats+reads.maps != 0 {
		t.Errorf("a sample placed, its callers in no mapping: %d reads of /proc, want none", reads.stats+reads.maps)
	}
	s.IP, s.Callchain = 0x10, nil
	in.Add(s) // read
	in.Handle(&perfdata.Lost{Lost: 1})
	s.Time += uint64(time.Second) / 2
	in.Add(s) // within a second of the last read
	if reads.maps != 1 {
		t.Errorf("%d reads, want 1: a read within a second of another", reads.maps)
	}
	s.Time += uint64(time.Second)
	in.Add(s) // read
	in.Add(s) // no loss since
	if reads.maps != 2 || in.ResyncReads != 2 || in.Resynced != 0 {
		t.Errorf("%d reads (%d counted, %d found), want 2, 2, 0", reads.maps, in.ResyncReads, in.Resynced)
	}
	in.Handle(&perfdata.Lost{Lost: 1})
	in.BeginRound()
	reads.maps = 0
	for pid := range uint32(2 * maxResyncs) {
		s.PID = 1000 + pid
		in.Add(s)
	}
	if reads.maps != maxResyncs {
		t.Errorf("%d processes read in a round, want at most %d", reads.maps, maxResyncs)
	}
	in.BeginRound()
	in.EndRound()
	// Started 10,000 s from now, in ticks of CLOCK_BOOTTIME.
	var boot unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot); err != nil {
		t.Fatal(err)
	}
	reads.maps, reads.start = 0, uint64(boot.Nano()+1e13)/(1e9/userHZ)
	s.PID = 2000
	in.Add(s)
	if reads.stats == 0 || reads.maps != 0 {
		t.Errorf("a process started after the sample: %d stats, %d reads of its mappings; want some, none", reads.stats, reads.maps)
	}
}

// TestMappingByTime: a round's samples at one address, before and after
// a file was mapped over it there, each in the mapping of its own time,
// in whatever order they come: the mapping found for one sample is not
// taken for another of another time. The daemon's push names them by
// the mapping ingest hands it.
func TestMappingByTime(t *testing.T) {
	in, _, _ := newTestIngest(t)
	in.procs.Map(process.Mapping{PID: testPID, Start: appStart, End: appStart + 0x100000, Path: "/usr/bin/other", Time: t0 + 500, Exec: true})
	var want []string
	for _, tm := range []uint64{100, 600, 200, 700, 650, 300} {
		in.Keep(sample(appStart+0x10, tm, false))
		if tm < 500 {
			want = append(want, "/usr/bin/app")
		} else {
			want = append(want, "/usr/bin/other")
		}
	}
	var got []string
	in.Round(func(s *perfdata.Sample, m *process.Mapping) {
		if m == nil {
			got = append(got, "none")
			return
		}
		got = append(got, m.Path)
	})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the samples' mappings %q, want %q", got, want)
	}
}
