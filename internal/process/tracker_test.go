package process

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"
)

// event is one record told to a Tracker.
type event struct {
	kind            byte // 'm' map, 'c' comm, 'f' fork
	pid, ppid, tid  uint32
	time            uint64
	start, end      uint64
	path, comm      string
	exec, kernel, x bool
}

func (e event) tell(t *Tracker) {
	switch e.kind {
	case 'm':
		t.Map(Mapping{PID: e.pid, Start: e.start, End: e.end, Path: e.path, Time: e.time, Exec: e.x, Kernel: e.kernel})
	case 'c':
		t.SetComm(e.pid, e.tid, e.time, e.comm, e.exec)
	case 'f':
		t.Fork(e.pid, e.ppid, e.tid, e.ppid, e.time)
	}
}

// randomEvents makes a story of a few pids that meet each other: forks
// (some of a pid from itself: threads), execs, renames and overlapping
// mappings, at times that often go backwards, as records of several CPUs
// arrive.
func randomEvents(rng *rand.Rand, n int) []event {
	pids := []uint32{1, 2, 3, 4}
	var evs []event
	clock := uint64(100)
	for range n {
		clock += uint64(rng.Intn(50))
		tm := clock
		if rng.Intn(4) == 0 {
			tm -= uint64(rng.Intn(200)) // a late record of another CPU
		}
		pid := pids[rng.Intn(len(pids))]
		switch rng.Intn(3) {
		case 0:
			start := uint64(rng.Intn(8)) << 12
			evs = append(evs, event{kind: 'm', pid: pid, time: tm, start: start, end: start + uint64(1+rng.Intn(3))<<12,
				path: fmt.Sprintf("/lib%d.so", rng.Intn(5)), x: rng.Intn(5) != 0, kernel: rng.Intn(10) == 0})
		case 1:
			evs = append(evs, event{kind: 'c', pid: pid, tid: pid, time: tm, comm: fmt.Sprint("c", rng.Intn(3)), exec: rng.Intn(2) == 0})
		case 2:
			evs = append(evs, event{kind: 'f', pid: pid, ppid: pids[rng.Intn(len(pids))], tid: pid, time: tm})
		}
	}
	return evs
}

// answers asks t about every pid, address page and time of a story.
func answers(t *Tracker) []string {
	var out []string
	for pid := uint32(1); pid <= 4; pid++ {
		for tm := uint64(0); tm < 2600; tm += 37 {
			sp := t.Thread(pid, pid, tm)
			out = append(out, fmt.Sprintf("%d@%d: %q [%d,%d)", pid, tm, sp.Comm, sp.From, sp.To))
			for page := uint64(0); page < 11; page++ {
				m := t.Lookup(pid, page<<12|0x10, tm, page == 10)
				if m != nil {
					out = append(out, fmt.Sprintf("  %#x: %s@%d", page<<12, m.Path, m.Time))
				}
			}
		}
	}
	for _, p := range t.Processes() {
		out = append(out, fmt.Sprintf("process %d %q %d", p.PID, p.Comm, len(p.Mappings)))
	}
	return out
}

// TestIncremental: a Tracker asked between records answers as a Tracker
// told the same records at once; and the records' order of arrival
// decides nothing but the order of records of equal times.
func TestIncremental(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := range 200 {
		evs := randomEvents(rng, 60)
		live := New()
		for j, e := range evs {
			e.tell(live)
			if j%7 == 0 || j == len(evs)-1 {
				whole := New()
				for _, e := range evs[:j+1] {
					e.tell(whole)
				}
				whole.Settle()
				if got, want := answers(live), answers(whole); !reflect.DeepEqual(got, want) {
					t.Fatalf("story %d, after %d records: asked as they came, the answers differ from those of the records told at once", i, j+1)
				}
			}
		}
		// Shuffling records of distinct times changes nothing. (The
		// last fork of a thread told wins, as in perf, where a later
		// one comes later: threads forked once here.)
		times := map[uint64]int{}
		forked := map[uint32]bool{}
		var distinct []event
		for _, e := range evs {
			times[e.time]++
		}
		for _, e := range evs {
			if times[e.time] == 1 && !(e.kind == 'f' && forked[e.tid]) {
				distinct = append(distinct, e)
				forked[e.tid] = forked[e.tid] || e.kind == 'f'
			}
		}
		a, b := New(), New()
		for _, e := range distinct {
			e.tell(a)
		}
		for _, j := range rng.Perm(len(distinct)) {
			distinct[j].tell(b)
		}
		if !reflect.DeepEqual(answers(a), answers(b)) {
			t.Fatalf("story %d: the answers depend on the order records of distinct times came in", i)
		}
	}
}

func TestLookup(t *testing.T) {
	tr := New()
	// Process 1 maps an image, forks 2, which execs another and maps it
	// over part of the old one; the records of 2 come before 1's fork.
	tr.SetComm(2, 2, 300, "child", true)
	tr.Map(Mapping{PID: 2, Start: 0x1000, End: 0x2000, Path: "/new", Time: 310, Exec: true})
	tr.Map(Mapping{PID: 1, Start: 0x1000, End: 0x4000, Path: "/old", Time: 100, Exec: true})
	tr.Fork(2, 1, 2, 1, 200)
	tr.Map(Mapping{PID: 1, Start: 0x8000, End: 0x9000, Path: "/data", Time: 100})
	tr.Map(Mapping{Kernel: true, Start: 0xffff0000, End: 0xffff1000, Path: "[kernel.kallsyms]_text", Exec: true})
	path := func(pid uint32, addr, time uint64, kernel bool) string {
		if m := tr.Lookup(pid, addr, time, kernel); m != nil {
			return m.Path
		}
		return ""
	}
	for _, tt := range []struct {
		pid        uint32
		addr, time uint64
		kernel     bool
		want       string
	}{
		{1, 0x1800, 150, false, "/old"},
		{1, 0x1800, 50, false, ""},      // before the mapping
		{2, 0x1800, 250, false, "/old"}, // forked: the parent's as it was
		{2, 0x3800, 305, false, "/old"}, // exec'd, the new image not mapped there: the old one
		{2, 0x1800, 320, false, "/new"}, // the new image
		{1, 0x8800, 150, false, ""},     // data, not executable
		{7, 0x1800, 150, false, ""},     // nobody
		{1, 0xffff0800, 5, true, "[kernel.kallsyms]_text"},
	} {
		if got := path(tt.pid, tt.addr, tt.time, tt.kernel); got != tt.want {
			t.Errorf("Lookup(%d, %#x, %d, %v) = %q, want %q", tt.pid, tt.addr, tt.time, tt.kernel, got, tt.want)
		}
	}
	if got := tr.Comm(2, 2, 250); got != "child" {
		// Before its exec the child has no name of its own, nor its
		// parent: it has its process's first, as in perf.
		t.Errorf("Comm before the exec = %q", got)
	}
	if got := tr.Comm(2, 2, 400); got != "child" {
		t.Errorf("Comm after the exec = %q", got)
	}
	p, ok := tr.Process(1)
	if !ok || len(p.Mappings) != 2 {
		t.Errorf("Process(1) = %+v, %v; want its two mappings, executable or not", p, ok)
	}
	if _, ok := tr.Process(0xffffffff); ok {
		t.Error("the kernel is a process")
	}
	v := tr.Version()
	tr.Map(Mapping{PID: 1, Start: 0x1000, End: 0x2000, Path: "/later", Time: 500, Exec: true})
	if tr.Version() == v {
		t.Error("a new mapping leaves the version")
	}
	if got := path(1, 0x1800, 600, false); got != "/later" {
		t.Errorf("after a new mapping over it: %q", got)
	}
}

// TestUnborn: a process, or one it was forked from, that had not begun
// at a time is unborn then, and a record of a later time that begins it
// changes what Lookup answers at that time.
func TestUnborn(t *testing.T) {
	tr := New()
	tr.Map(Mapping{PID: 1, Start: 0x1000, End: 0x2000, Path: "//anon", Time: 100, Exec: true, Anon: true})
	if !tr.Unborn(2, 150) {
		t.Error("a process not known is not unborn")
	}
	if tr.Lookup(2, 0x1800, 150, false) != nil {
		t.Fatal("a process not known has a mapping")
	}
	tr.Fork(2, 1, 2, 1, 300) // of a later time than 150
	if !tr.Unborn(2, 150) {
		t.Error("before its fork a process is not unborn")
	}
	if m := tr.Lookup(2, 0x1800, 150, false); m == nil || m.Path != "//anon" {
		t.Errorf("before its fork, Lookup = %+v: want its parent's mapping, as of its first generation", m)
	}
	if tr.Unborn(2, 350) || tr.Unborn(1, 150) || tr.Unborn(1, 50) {
		t.Error("a process begun (or implicit, from time 0) is unborn")
	}
	// A process forked from one begun later: unborn before the
	// parent's first generation, whose fork may still come.
	tr.Fork(5, 1, 5, 1, 120)
	tr.Fork(6, 5, 6, 5, 130)
	if tr.Unborn(6, 140) || !tr.Unborn(6, 110) {
		t.Error("a grandchild is unborn after its forks or not before them")
	}
}

// TestSettledConcurrent: after Settle, goroutines ask at once (the race
// detector watches) and get the answers one gets alone.
func TestSettledConcurrent(t *testing.T) {
	tr := New()
	for _, e := range randomEvents(rand.New(rand.NewSource(2)), 200) {
		e.tell(tr)
	}
	tr.Settle()
	want := answers(tr)
	done := make(chan []string)
	for range 4 {
		go func() { done <- answers(tr) }()
	}
	for range 4 {
		if got := <-done; !reflect.DeepEqual(got, want) {
			t.Error("answers differ when asked at once")
		}
	}
}

// TestSpansAndSteady: within a thread's span the answers stay the same;
// and where Steady says a place resolves the same way from one time to
// another, its thread's name and, for a user address, its mapping are
// the same at every time between (every record's time, the times around
// it and a grid), on random stories.
func TestSpansAndSteady(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	steady, unsteady := 0, 0
	for i := range 300 {
		evs := randomEvents(rng, 40)
		tr := New()
		for _, e := range evs {
			e.tell(tr)
		}
		tr.Settle()
		var times []uint64
		for _, e := range evs {
			times = append(times, e.time-1, e.time, e.time+1)
		}
		for tm := uint64(0); tm < 2600; tm += 13 {
			times = append(times, tm)
		}
		for range 200 {
			pid := uint32(1 + rng.Intn(4))
			tid := pid
			from := uint64(rng.Intn(2600))
			if slices.ContainsFunc(times, func(tm uint64) bool { return tm >= from && forkCycle(tr, tid, tm) }) {
				// Corrupt fork records: which thread's name is
				// computed first decides the others'.
				continue
			}
			to := from + uint64(rng.Intn(600))
			addr := uint64(rng.Intn(8))<<12 | 0x10
			user := rng.Intn(4) != 0
			sp := tr.Thread(pid, tid, from)
			ok := tr.Steady(pid, tid, addr, user, from, to)
			if ok {
				steady++
			} else {
				unsteady++
			}
			m := tr.Lookup(pid, addr, from, false)
			for _, tm := range times {
				if tm < from {
					continue
				}
				if tm < sp.To && tr.Comm(pid, tid, tm) != sp.Comm {
					t.Fatalf("story %d: thread %d is %q at %d, in the span [%d, %d) of %q", i, tid, tr.Comm(pid, tid, tm), tm, sp.From, sp.To, sp.Comm)
				}
				if !ok || tm > to {
					continue
				}
				if c := tr.Comm(pid, tid, tm); c != sp.Comm {
					t.Fatalf("story %d: Steady(%d, %#x, user %v, %d, %d), but the thread is %q at %d and %q at %d", i, pid, addr, user, from, to, sp.Comm, from, c, tm)
				}
				if user && tr.Lookup(pid, addr, tm, false) != m {
					t.Fatalf("story %d: Steady(%d, %#x, %d, %d), but the mapping at %d differs from that at %d", i, pid, addr, from, to, tm, from)
				}
			}
		}
	}
	if steady == 0 || unsteady == 0 {
		t.Fatalf("%d steady and %d unsteady places: the stories test nothing", steady, unsteady)
	}
}

// forkCycle reports whether tid's creators at tm, each by the last fork
// of its tid at or before the time the one after it was made, lead back
// to a thread met before.
func forkCycle(t *Tracker, tid uint32, tm uint64) bool {
	seen := map[uint32]bool{}
	for {
		if seen[tid] {
			return true
		}
		seen[tid] = true
		f, ok := forkBefore(t.threads[tid], tm)
		if !ok || f.ptid == tid {
			return false
		}
		tid, tm = f.ptid, f.time
	}
}

// TestCommReusedTID is what FuzzReplay found: pid 4 samples, pid 2 is
// forked from it and named "a", and later a new pid 4 is forked from pid
// 2. The first pid 4 was never named: it is ":4" throughout, not "a"
// from the time pid 2 took that name (the later fork's parent is not
// its).
func TestCommReusedTID(t *testing.T) {
	tr := New()
	tr.Fork(2, 4, 2, 4, 1010)
	tr.SetComm(2, 2, 1020, "a", false)
	tr.Fork(4, 2, 4, 2, 5850)
	tr.Settle()
	for _, c := range []struct {
		time uint64
		want string
	}{{1000, ":4"}, {1030, ":4"}, {5849, ":4"}, {5850, "a"}, {9000, "a"}} {
		if got := tr.Comm(4, 4, c.time); got != c.want {
			t.Errorf("thread 4 at %d is %q, want %q", c.time, got, c.want)
		}
		if sp := tr.Thread(4, 4, c.time); sp.Comm != c.want {
			t.Errorf("Thread(4, 4, %d) = %+v, want comm %q", c.time, sp, c.want)
		}
	}
	if sp := tr.Thread(4, 4, 1000); sp.To != 5850 {
		t.Errorf("thread 4's first span ends at %d, want at the fork of the next (5850)", sp.To)
	}
}

// TestForget: a Tracker that forgets the processes that exit holds only
// those that live, however many came and went; a child that has not
// exec'd keeps its parent's address space until it is forgotten too.
func TestForget(t *testing.T) {
	tr := New()
	tr.SetComm(1, 1, 0, "init", false)
	tr.Map(Mapping{PID: 1, Start: 0x1000, End: 0x2000, Path: "/sbin/init", Time: 1, Exec: true})
	for i := range 10000 {
		pid := uint32(100 + i)
		tm := uint64(10 + 10*i)
		tr.Fork(pid, 1, pid, 1, tm)
		tr.Fork(pid, pid, pid+50000, pid, tm+1) // a thread
		tr.SetComm(pid, pid, tm+2, "job", true)
		tr.Map(Mapping{PID: pid, Start: 0x1000, End: 0x3000, Path: "/bin/job", Time: tm + 3, Exec: true})
		if m := tr.Lookup(pid, 0x1800, tm+4, false); m == nil || m.Path != "/bin/job" {
			t.Fatalf("pid %d: Lookup = %+v", pid, m)
		}
		tr.Forget(pid)
	}
	if len(tr.procs) != 1 || len(tr.comms) != 1 || len(tr.threads) != 0 || len(tr.owner) != 1 {
		t.Errorf("after 10000 processes came and went: %d processes, %d threads' names, %d forks, %d owners; want init's alone",
			len(tr.procs), len(tr.comms), len(tr.threads), len(tr.owner))
	}
	if m := tr.Lookup(1, 0x1800, 1<<40, false); m == nil || m.Path != "/sbin/init" || tr.Comm(1, 1, 1<<40) != "init" {
		t.Errorf("init after the others were forgotten: %+v, %q", m, tr.Comm(1, 1, 1<<40))
	}

	// A parent that exits before its child, which never exec'd: the
	// child still finds the parent's mappings, until it goes too.
	tr.Fork(7, 1, 7, 1, 1<<41)
	tr.Map(Mapping{PID: 7, Start: 0x5000, End: 0x6000, Path: "/bin/sh", Time: 1<<41 + 1, Exec: true})
	tr.Fork(8, 7, 8, 7, 1<<41+2)
	tr.Forget(7)
	if m := tr.Lookup(8, 0x5800, 1<<41+3, false); m == nil || m.Path != "/bin/sh" {
		t.Errorf("the child of a forgotten parent: Lookup = %+v, want the parent's /bin/sh", m)
	}
	if _, ok := tr.Process(7); !ok {
		t.Error("a parent was forgotten while its child lives")
	}
	tr.Forget(8)
	if _, ok := tr.Process(7); ok {
		t.Error("the parent is kept after its child was forgotten")
	}
	if len(tr.procs) != 1 {
		t.Errorf("%d processes, want init's alone", len(tr.procs))
	}

	// A tid reused by a process that lives keeps its name when the
	// process that had it first is forgotten late.
	tr.Fork(30, 1, 30, 1, 1<<42)
	tr.Fork(31, 30, 31, 30, 1<<42+1)
	tr.Fork(30, 30, 32, 30, 1<<42+2) // thread 32 of 30
	tr.Forget(30)                    // kept: 31 lives
	tr.Fork(40, 1, 40, 1, 1<<42+3)
	tr.Fork(40, 40, 32, 40, 1<<42+4) // tid 32 again, in 40
	tr.SetComm(40, 32, 1<<42+5, "worker", false)
	tr.Forget(31) // and so 30
	if c := tr.Comm(40, 32, 1<<42+6); c != "worker" {
		t.Errorf("thread 32 of process 40 is %q after process 30 was forgotten, want worker", c)
	}
}

// TestExecutable: a process's executable is the file its comm names in
// its last address space, else the first mapping that is not a shared
// library; a child forked without an exec runs its parent's.
func TestExecutable(t *testing.T) {
	tr := New()
	for _, e := range []event{
		// pid 1 existed before the recording: its maps, then its name.
		{kind: 'm', pid: 1, time: 0, start: 0x7000, end: 0x8000, path: "/usr/lib/libc.so.6", x: true},
		{kind: 'm', pid: 1, time: 0, start: 0x1000, end: 0x2000, path: "/usr/bin/bash", x: true},
		{kind: 'c', pid: 1, tid: 1, time: 0, comm: "bash"},
		// it forks 2, which execs python3, whose comm is its link's name.
		{kind: 'f', pid: 2, ppid: 1, tid: 2, time: 10},
		{kind: 'c', pid: 2, tid: 2, time: 20, comm: "python3", exec: true},
		{kind: 'm', pid: 2, time: 21, start: 0x7000, end: 0x9000, path: "/usr/lib/ld-linux-x86-64.so.2", x: true},
		{kind: 'm', pid: 2, time: 21, start: 0x3000, end: 0x4000, path: "/usr/bin/python3.11", x: true},
		{kind: 'm', pid: 2, time: 22, start: 0x5000, end: 0x6000, path: "//anon", x: true},
		// 3 is forked from 1 and never execs.
		{kind: 'f', pid: 3, ppid: 1, tid: 3, time: 30},
		// 4 runs a program named as its comm, mapped after a library.
		{kind: 'c', pid: 4, tid: 4, time: 40, comm: "minijit", exec: true},
		{kind: 'm', pid: 4, time: 41, start: 0x1000, end: 0x2000, path: "/opt/lib/libjit.so", x: true},
		{kind: 'm', pid: 4, time: 41, start: 0x3000, end: 0x4000, path: "/tmp/build/minijit", x: true},
	} {
		e.tell(tr)
	}
	tr.Settle()
	for pid, want := range map[uint32]string{1: "/usr/bin/bash", 2: "/usr/bin/python3.11", 3: "/usr/bin/bash", 4: "/tmp/build/minijit", 5: ""} {
		got := ""
		if m := tr.Executable(pid); m != nil {
			got = m.Path
		}
		if got != want {
			t.Errorf("Executable(%d) = %q, want %q", pid, got, want)
		}
	}
}

// TestStampForkCycles: corrupt fork records that make two processes each
// the other's parent many times cost Stamp a visit of each, not a walk of
// every path between them (20^64 with a recursion bounded only by
// depth, which a fuzzed file found); and a change to either still
// changes the stamp of both.
func TestStampForkCycles(t *testing.T) {
	tr := New()
	for i := range uint64(20) {
		tr.Fork(1, 2, 1, 2, 100+i)
		tr.Fork(2, 1, 2, 1, 100+i)
	}
	before := tr.Stamp(1)
	if before == 0 {
		t.Fatal("Stamp(1) = 0: the Tracker knows nothing of a forked process")
	}
	tr.Map(Mapping{PID: 2, Start: 0x1000, End: 0x2000, Path: "/lib", Time: 500, Exec: true})
	after := tr.Stamp(1)
	if after == before {
		t.Errorf("Stamp(1) = %d before and after a mapping of its parent 2", after)
	}
	if s := tr.Stamp(2); s != after {
		t.Errorf("Stamp(2) = %d, Stamp(1) = %d: each is the other's parent, so both see the latest change", s, after)
	}
	if s := tr.Stamp(3); s != 0 {
		t.Errorf("Stamp(3) = %d for a pid never told of, want 0", s)
	}
}
