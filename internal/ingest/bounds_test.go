package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/record"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/internal/trust"
)

// followDump makes process pid of in follow the jitdump at path.
func followDump(t *testing.T, in *Ingest, pid uint32, path string) *jitProc {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	j := in.pid(pid).jit
	j.handler, j.path, j.f = "jitdump", path, f
	j.p = anon.Process{PID: int(pid), NSPID: int(pid), UID: trust.UnknownOwner}
	return j
}

// drainJIT runs rounds, the clock 100 ms apart, until no process's JIT
// data has more to read (or met a bound).
func drainJIT(t *testing.T, in *Ingest) {
	t.Helper()
	clock := uint64(1e9)
	in.now = func() uint64 { return clock }
	for range 10_000 {
		clock += uint64(record.PollInterval)
		in.BeginRound()
		more := false
		for _, st := range in.pids {
			j := st.jit
			if j.handler != "" && j.bound == nil && j.f != nil && j.off < j.size {
				more = true
			}
		}
		if !more {
			return
		}
	}
	t.Fatal("the JIT data is never read")
}

// TestJITCopyIncremental: the session's copy of a jitdump is appended to
// as the dump grows, never written anew nor read whole into memory: at
// each save it is the dump up to where the daemon applied it, in the
// same file.
func TestJITCopyIncremental(t *testing.T) {
	in, _, dir := newTestIngest(t)
	path := filepath.Join(t.TempDir(), "jit-600.dump")
	writeLoads(t, path, 600, 0x1000, 0, 100_000) // 9 MB
	j := followDump(t, in, 600, path)
	drainJIT(t, in)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	alloc := ms.TotalAlloc
	in.SaveAllJIT()
	runtime.ReadMemStats(&ms)
	if grew := ms.TotalAlloc - alloc; grew > 2<<20 {
		t.Errorf("copying %d MB of JIT data allocated %d MB: read into memory", j.off>>20, grew>>20)
	}
	copyPath := filepath.Join(sampledb.JITDir(dir, sampledb.Current, 600), "data.jitdump")
	var first unix.Stat_t
	if err := unix.Stat(copyPath, &first); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		writeLoads(t, path, 600, 0x1000, 100_000+uint64(round)*1000, 1000)
		drainJIT(t, in)
		in.SaveJIT()
		src, _ := os.ReadFile(path)
		cp, err := os.ReadFile(copyPath)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(cp, src[:j.off]) || j.off != int64(len(src)) {
			t.Fatalf("after growth %d the copy has %d bytes, the dump %d, applied %d", round, len(cp), len(src), j.off)
		}
		var st unix.Stat_t
		unix.Stat(copyPath, &st)
		if st.Ino != first.Ino {
			t.Errorf("after growth %d the copy is another file: written anew", round)
		}
	}
	if in.JITData != j.off {
		t.Errorf("the session counts %d bytes of JIT data, the copy has %d", in.JITData, j.off)
	}
}

// TestJITDataBounds: a process's JIT data is followed and copied up to
// --max-jit-data-per-process, the session's up to --max-jit-data; past
// a bound no more is, the copy holds what was followed, and the
// processes are counted and named.
func TestJITDataBounds(t *testing.T) {
	in, _, dir := newTestIngest(t)
	in.MaxJITDataPerProcess, in.MaxJITData = 1<<20, 3<<19 // 1 MiB, 1.5 MiB
	tmp := t.TempDir()
	for _, pid := range []uint32{601, 602} {
		path := filepath.Join(tmp, fmt.Sprintf("jit-%d.dump", pid))
		writeLoads(t, path, pid, 0x1000, 0, 40_000) // 3.6 MB
		followDump(t, in, pid, path)
	}
	drainJIT(t, in)
	in.SaveAllJIT()
	total := int64(0)
	for _, pid := range []int{601, 602} {
		j := in.pids[uint32(pid)].jit
		fi, err := os.Stat(filepath.Join(sampledb.JITDir(dir, sampledb.Current, pid), "data.jitdump"))
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
		if fi.Size() > in.MaxJITDataPerProcess || fi.Size() != j.off {
			t.Errorf("pid %d: a copy of %d bytes, followed %d, bound %d", pid, fi.Size(), j.off, in.MaxJITDataPerProcess)
		}
		var b *errBound
		if !errors.As(j.bound, &b) {
			t.Errorf("pid %d: no bound met: %v", pid, j.bound)
		}
	}
	if total > in.MaxJITData || total < in.MaxJITData-2*maxRecord {
		t.Errorf("the session has %d bytes of JIT data, bound %d", total, in.MaxJITData)
	}
	if in.JITBounded != 2 || len(in.JITErrorList()) != 2 {
		t.Errorf("%d processes counted at a bound, errors %q", in.JITBounded, in.JITErrorList())
	}
}

// TestSparseJITRefused: a sparse perf map or jitdump (256 MiB of which
// the user's disk holds a few KB) is refused before it is read: nothing
// of it is followed or copied.
func TestSparseJITRefused(t *testing.T) {
	in, _, dir := newTestIngest(t)
	tmp := t.TempDir()
	mp := filepath.Join(tmp, "perf-603.map")
	if err := os.WriteFile(mp, []byte("1000 40 fib\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(mp, 256<<20); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(mp)
	j := in.pid(603).jit
	j.handler, j.path, j.f, j.snap = "perfmap", mp, f, 1
	j.p = anon.Process{PID: 603, NSPID: 603, UID: trust.UnknownOwner}
	dump := filepath.Join(tmp, "jit-604.dump")
	writeLoads(t, dump, 604, 0x1000, 0, 10)
	os.Truncate(dump, 256<<20)
	followDump(t, in, 604, dump)
	drainJIT(t, in)
	in.SaveAllJIT()
	for _, pid := range []uint32{603, 604} {
		if err := in.JITErrors[pid]; !errors.Is(err, trust.ErrUntrusted) {
			t.Errorf("pid %d: %v, want a refusal", pid, err)
		}
		if j := in.pids[pid].jit; j.entries() != 0 {
			t.Errorf("pid %d: %d pieces of code followed", pid, j.entries())
		}
	}
	if n := dirSize(t, filepath.Join(dir, "samples")); n > 1<<20 {
		t.Errorf("the session holds %d bytes", n)
	}
}

// TestPerfmapRewriteBounded: a perf map rewritten again and again with
// new names makes the numbered dump grow until the per-process bound,
// then no more; the ranges of the last map are all the daemon keeps.
func TestPerfmapRewriteBounded(t *testing.T) {
	in, _, dir := newTestIngest(t)
	in.MaxJITDataPerProcess = 256 << 10
	mp := filepath.Join(t.TempDir(), "perf-605.map")
	write := func(gen int) {
		var b bytes.Buffer
		for i := range 500 {
			fmt.Fprintf(&b, "%x 10 f%d_%d\n", 0x1000+0x10*i, gen, i)
		}
		os.WriteFile(mp+".tmp", b.Bytes(), 0o600)
		os.Rename(mp+".tmp", mp)
	}
	write(0)
	f, _ := os.Open(mp)
	j := in.pid(605).jit
	j.handler, j.path, j.f, j.snap = "perfmap", mp, f, 1
	j.p = anon.Process{PID: 605, NSPID: 605, UID: trust.UnknownOwner}
	for gen := range 100 {
		write(gen)
		drainJIT(t, in)
	}
	fi, err := os.Stat(filepath.Join(sampledb.JITDir(dir, sampledb.Current, 605), perfmapSeqFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > in.MaxJITDataPerProcess {
		t.Errorf("the numbered dump grew to %d bytes, bound %d", fi.Size(), in.MaxJITDataPerProcess)
	}
	var b *errBound
	if !errors.As(j.bound, &b) {
		t.Errorf("no bound met after 100 maps of new names: %v", j.bound)
	}
	if len(j.ranges) > 1000 {
		t.Errorf("%d ranges kept for maps of 500 lines", len(j.ranges))
	}
}

func dirSize(t *testing.T, dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// TestSessionChangedCopiesAgain: after save (or reset), the new session
// gets the whole of a jitdump's copy again, and a perf map is numbered
// anew into the new session's own numbered dump, every range of it; the
// saved session keeps its own.
func TestSessionChangedCopiesAgain(t *testing.T) {
	in, db, dir := newTestIngest(t)
	tmp := t.TempDir()
	dump := filepath.Join(tmp, "jit-610.dump")
	writeLoads(t, dump, 610, 0x1000, 0, 1000)
	j := followDump(t, in, 610, dump)
	mp := filepath.Join(tmp, "perf-611.map")
	os.WriteFile(mp, []byte("1000 10 a\n2000 10 b\n3000 10 c\n"), 0o600)
	f, _ := os.Open(mp)
	m := in.pid(611).jit
	m.handler, m.path, m.f, m.snap = "perfmap", mp, f, 1
	m.p = anon.Process{PID: 611, NSPID: 611, UID: trust.UnknownOwner}
	drainJIT(t, in)
	in.SaveAllJIT()
	if err := db.Save("first"); err != nil {
		t.Fatal(err)
	}
	in.SessionChanged()
	drainJIT(t, in)
	in.SaveAllJIT()
	for _, session := range []string{"first", sampledb.Current} {
		cp, err := os.ReadFile(filepath.Join(sampledb.JITDir(dir, session, 610), "data.jitdump"))
		src, _ := os.ReadFile(dump)
		if err != nil || !bytes.Equal(cp, src) {
			t.Errorf("%s: the jitdump's copy has %d of its %d bytes (%v)", session, len(cp), len(src), err)
		}
		seq, err := os.ReadFile(filepath.Join(sampledb.JITDir(dir, session, 611), perfmapSeqFile))
		if err != nil {
			t.Fatalf("%s: %v", session, err)
		}
		for _, name := range []string{"a", "b", "c"} {
			if !bytes.Contains(seq, []byte(name+"\x00")) {
				t.Errorf("%s: the numbered dump lacks %q", session, name)
			}
		}
	}
	if in.JITData != j.off+m.added {
		t.Errorf("the new session counts %d bytes of JIT data, want %d", in.JITData, j.off+m.added)
	}
}

// TestPerfmapRewrittenFasterThanRead: a map written anew faster than the
// daemon's share of work reads it keeps the daemon's ranges to about
// two maps' worth: renamed over the old, each map is read whole before
// the next; written anew in place, what an unfinished read had seen is
// all that stays.
func TestPerfmapRewrittenFasterThanRead(t *testing.T) {
	for _, inPlace := range []bool{false, true} {
		mp := filepath.Join(t.TempDir(), "perf-612.map")
		write := func(gen int) {
			var b bytes.Buffer
			for i := range 3000 {
				fmt.Fprintf(&b, "%x 10 g%d_%d\n", 0x1000+0x10*(i%200), gen, i)
			}
			if inPlace {
				os.WriteFile(mp, b.Bytes(), 0o600)
				return
			}
			os.WriteFile(mp+".tmp", b.Bytes(), 0o600)
			os.Rename(mp+".tmp", mp)
		}
		write(0)
		f, _ := os.Open(mp)
		session := t.TempDir()
		root, _ := os.OpenRoot(session)
		j := &jitProc{pid: 612, handler: "perfmap", path: mp, f: f, snap: 1, p: anon.Process{PID: 612, NSPID: 612, UID: trust.UnknownOwner}}
		for gen := 1; gen <= 20; gen++ {
			w := work{records: 1000, bytes: 1 << 30}
			if err := j.poll(uint64(gen)*1e6, &w, unbounded, func() (*os.Root, error) { return root, nil }); err != nil {
				t.Fatal(err)
			}
			if len(j.ranges) > 2*3000+1000 {
				t.Fatalf("in place %v: %d ranges after %d maps of 3000 lines", inPlace, len(j.ranges), gen)
			}
			write(gen)
		}
		j.close()
		root.Close()
		if !inPlace {
			// Whole maps were read: every name of one of them is numbered.
			seq, _ := os.ReadFile(filepath.Join(session, perfmapSeqFile))
			whole := false
			for gen := 1; gen < 20 && !whole; gen++ {
				whole = bytes.Contains(seq, fmt.Appendf(nil, "g%d_0\x00", gen)) && bytes.Contains(seq, fmt.Appendf(nil, "g%d_2999\x00", gen))
			}
			if !whole {
				t.Error("no map written anew was read whole")
			}
		}
	}
}

// TestTimeless: Timeless says a process followed has a perf map (JIT
// data without times, which the daemon keeps its rounds short for), from
// the round after it is found until the round after it is let go of; a
// jitdump's process is not.
func TestTimeless(t *testing.T) {
	in, _, _ := newTestIngest(t)
	tmp := t.TempDir()
	dump := filepath.Join(tmp, "jit-604.dump")
	writeLoads(t, dump, 604, 0x1000, 0, 10)
	followDump(t, in, 604, dump)
	in.BeginRound()
	if in.Timeless() {
		t.Fatal("a jitdump's process alone is timeless")
	}
	mp := filepath.Join(tmp, "perf-603.map")
	if err := os.WriteFile(mp, []byte("1000 40 fib\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(mp)
	if err != nil {
		t.Fatal(err)
	}
	j := in.pid(603).jit
	j.handler, j.path, j.f, j.snap = "perfmap", mp, f, 1
	j.p = anon.Process{PID: 603, NSPID: 603, UID: trust.UnknownOwner}
	in.BeginRound()
	if !in.Timeless() {
		t.Fatal("a perf map followed, and not timeless")
	}
	in.reset(603)
	in.BeginRound()
	if in.Timeless() {
		t.Fatal("timeless after the perf map's process was let go of")
	}
}
