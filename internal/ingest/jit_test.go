package ingest

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/jitdump"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/jitlog"
)

// TestPerfmapSnapshots: a perf map read again when it changes gives each
// range it had not seen a new sequence number (a map has none), keeps
// the numbers of the ranges that stay, and the numbered dump it writes
// into the session names each generation for the perfmap handler, by
// sequence number.
func TestPerfmapSnapshots(t *testing.T) {
	dir, session := t.TempDir(), t.TempDir()
	mp := filepath.Join(dir, "perf-4242.map")
	write := func(s string) {
		if err := os.WriteFile(mp+".tmp", []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(mp+".tmp", mp); err != nil {
			t.Fatal(err)
		}
	}
	write("1000 40 fib\n2000 40 sum\n")
	j := &jitProc{pid: 4242, handler: "perfmap", path: mp, p: anon.Process{PID: 4242, UID: trust.UnknownOwner}}
	f, err := os.Open(mp)
	if err != nil {
		t.Fatal(err)
	}
	j.f, j.snap = f, 1
	root, err := os.OpenRoot(session)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	sess := func() (*os.Root, error) { return root, nil }
	if err := pollAll(j, 100, sess); err != nil {
		t.Fatal(err)
	}
	// Re-generated over fib; the map written anew and renamed over the
	// old, which the daemon notices.
	write("1000 40 fib\n2000 40 sum\n1000 40 collatz\n")
	if err := pollAll(j, 200, sess); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ addr, t, seq uint64 }{
		{0x1010, 150, 1}, // fib
		{0x2010, 150, 2},
		{0x1010, 250, 3}, // collatz, a new number
		{0x2010, 250, 2}, // sum unchanged: its number stays
	} {
		if seq, _ := j.code.lookup(tc.addr, tc.t); seq != tc.seq {
			t.Errorf("lookup(%#x, %d) = %d, want %d", tc.addr, tc.t, seq, tc.seq)
		}
	}
	j.close()
	dump, err := os.ReadFile(filepath.Join(session, perfmapSeqFile))
	if err != nil {
		t.Fatal(err)
	}
	p := anon.Process{PID: 4242, NSPID: 4242, UID: trust.UnknownOwner,
		Embedded: map[string][]byte{mp + ".seq": dump}, Kinds: map[string]string{mp + ".seq": anon.PerfmapSeq}}
	var h anon.Handler
	for _, b := range anon.Builtins() {
		if b.Name() == "perfmap" {
			h = b
		}
	}
	r, err := h.Claim(&p)
	if err != nil || r == nil {
		t.Fatalf("the perfmap handler does not claim the numbered dump: %v", err)
	}
	sr := r.(anon.SeqResolver)
	for seq, want := range map[uint64]string{1: "fib", 2: "sum", 3: "collatz"} {
		addr := uint64(0x1010)
		if want == "sum" {
			addr = 0x2010
		}
		if s, ok := sr.ResolveSeq(addr, seq); !ok || s.Name != want {
			t.Errorf("ResolveSeq(%#x, %d) = %q, %v, want %q", addr, seq, s.Name, ok, want)
		} else if s.Code != nil {
			// The dump holds zeros where the format wants code.
			t.Errorf("ResolveSeq(%#x, %d) gives %d bytes of code; a perf map has none", addr, seq, len(s.Code))
		}
	}
}

// TestStaleJitdump: a jitdump an earlier process with the pid left is
// not taken for this process's data.
func TestStaleJitdump(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jit-4242.dump")
	hdr, err := jitdump.AppendHeader(nil, jitdump.Header{ByteOrder: binary.LittleEndian, Version: 1, ElfMach: 62, PID: 999})
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := jitdump.AppendRecord(nil, binary.LittleEndian, &jitdump.CodeLoad{PID: 999, CodeAddr: 0x1000, CodeSize: 0x10, CodeIndex: 1, Name: "old"})
	if err := os.WriteFile(path, append(hdr, rec...), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	j := &jitProc{pid: 4242, handler: "jitdump", path: path, f: f, p: anon.Process{PID: 4242, NSPID: 4242, UID: trust.UnknownOwner}}
	if err := pollAll(j, 100, nil); err == nil || j.handler != "" || !j.rejected[path] {
		t.Errorf("poll of another process's dump: %v, handler %q, rejected %v", err, j.handler, j.rejected)
	}
	if _, ok := j.code.lookup(0x1008, 200); ok {
		t.Error("the stale dump's code is in the table")
	}
}

// unbounded is room without bounds.
var unbounded = jitRoom{bytes: 1 << 62, entries: 1 << 30}

// pollAll polls j without bounds on the work.
func pollAll(j *jitProc, now uint64, session func() (*os.Root, error)) error {
	w := work{1 << 62, 1 << 62}
	return j.poll(now, &w, unbounded, session)
}

// writeLoads appends n CODE_LOADs at addr to the jitdump at path (its
// header first when it is new), with code indexes first+1 on and
// timestamps 10 ns apart; it returns the bytes it wrote.
func writeLoads(t testing.TB, path string, pid uint32, addr uint64, first, n uint64) int64 {
	t.Helper()
	var b []byte
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		b, _ = jitdump.AppendHeader(nil, jitdump.Header{ByteOrder: binary.LittleEndian, Version: 1, ElfMach: 62, PID: pid})
	}
	for i := first; i < first+n; i++ {
		b, _ = jitdump.AppendRecord(b, binary.LittleEndian, &jitdump.CodeLoad{PID: pid, TID: pid, VMA: addr, CodeAddr: addr, CodeSize: 0x10,
			CodeIndex: i + 1, Name: "f", RecordHeader: jitdump.RecordHeader{Timestamp: 10 * (i + 1)}})
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	return int64(len(b))
}

// TestJitdumpBoundedWork: a user's jitdump of 150,000 loads at one
// address (it froze the daemon for 11 s) is applied a share at a time:
// one poll applies no more records than its work allows, each record is
// read once however often the dump grows, and once all are read the
// table answers as if it had read them at once.
func TestJitdumpBoundedWork(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jit-4242.dump")
	const n = 150_000
	size := writeLoads(t, path, 4242, 0x1000, 0, n)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	j := &jitProc{pid: 4242, handler: "jitdump", path: path, f: f, p: anon.Process{PID: 4242, NSPID: 4242, UID: trust.UnknownOwner}}
	defer j.close()
	const share = 5000
	read, polls := int64(0), 0
	for j.off < size {
		w := work{records: share, bytes: 1 << 30}
		if err := j.poll(10*n, &w, unbounded, nil); err != nil {
			t.Fatal(err)
		}
		polls++
		if applied := share - w.records; applied > share || applied <= 0 {
			t.Fatalf("poll %d applied %d records, share %d", polls, applied, share)
		}
		read += 1<<30 - w.bytes
		if polls == 1 {
			if seq, _ := j.code.lookup(0x1008, 10*n); seq != share {
				t.Errorf("after one poll the table knows generation %d, want %d (no more than the share)", seq, share)
			}
		}
		if polls > n/share+1 {
			t.Fatalf("%d polls and the dump is not read", polls)
		}
	}
	if polls != n/share {
		t.Errorf("%d polls, want %d", polls, n/share)
	}
	// The dump grows: only what it gained is read.
	more := writeLoads(t, path, 4242, 0x1000, n, 10)
	w := work{records: share, bytes: 1 << 30}
	if err := j.poll(10*n, &w, unbounded, nil); err != nil {
		t.Fatal(err)
	}
	read += 1<<30 - w.bytes
	if read != size+more {
		t.Errorf("%d bytes read for a dump of %d: read again from its start", read, size+more)
	}
	for _, tc := range []struct{ t, seq uint64 }{{10 * (n + 10), n + 10}, {10 * n, n}, {10*(n+5) + 1, n + 5}} {
		if seq, _ := j.code.lookup(0x1008, tc.t); seq != tc.seq {
			t.Errorf("lookup(0x1008, %d) = %d, want %d", tc.t, seq, tc.seq)
		}
	}
}

// TestJitlogBoundedWork: the same flood through jitlog: 150,000 loads at
// one address are applied a share at a time, each record read once, and
// the table then names the code live at each time.
func TestJitlogBoundedWork(t *testing.T) {
	dir := t.TempDir()
	l, err := jitlog.Open(jitlog.Options{Dir: dir, Name: "flood"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 150_000
	seqs := make([]uint64, n)
	for i := range n {
		if seqs[i], err = l.CodeLoad(0x1000, 0x10, "f", nil); err != nil {
			t.Fatal(err)
		}
	}
	path := l.Path()
	l.Close()
	tail, err := jitlog.OpenTail(path, &jitlog.ReadOptions{Owner: trust.UnknownOwner})
	if err != nil {
		t.Fatal(err)
	}
	pid := uint32(os.Getpid())
	j := &jitProc{pid: pid, handler: "jitlog", path: path, tail: tail, p: anon.Process{PID: int(pid), NSPID: int(pid), UID: trust.UnknownOwner}}
	defer j.close()
	const share = 5000
	read, polls := int64(0), 0
	for {
		w := work{records: share, bytes: 1 << 30}
		if err := j.poll(uint64(monotonic()), &w, unbounded, nil); err != nil {
			t.Fatal(err)
		}
		polls++
		if applied := share - w.records; applied > share {
			t.Fatalf("poll %d applied %d records, share %d", polls, applied, share)
		}
		if w.records == share {
			break // nothing more
		}
		read += 1<<30 - w.bytes
		if polls > n/share+5 {
			t.Fatalf("%d polls and the database is not read", polls)
		}
	}
	if polls < n/share {
		t.Errorf("%d polls for %d records in shares of %d", polls, n, share)
	}
	if read != j.tail.Offset() {
		t.Errorf("%d bytes read for records ending at %d", read, j.tail.Offset())
	}
	if seq, _ := j.code.lookup(0x1008, uint64(monotonic())); seq != seqs[n-1] {
		t.Errorf("the code live now is generation %d, want %d", seq, seqs[n-1])
	}
}

// TestJitdumpModifiedSameSize: a stat in the middle of a JIT's write can
// see the write's mtime before its size; a jitdump of the same size but
// another mtime is no dump written anew, and is followed on.
func TestJitdumpModifiedSameSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jit-4242.dump")
	writeLoads(t, path, 4242, 0x1000, 0, 10)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	j := &jitProc{pid: 4242, handler: "jitdump", path: path, f: f, p: anon.Process{PID: 4242, NSPID: 4242, UID: trust.UnknownOwner}}
	defer j.close()
	if err := pollAll(j, 1000, nil); err != nil {
		t.Fatal(err)
	}
	j.mod = j.mod.Add(-time.Second) // the stat before saw an older mtime
	if err := pollAll(j, 1000, nil); err != nil || j.bound != nil {
		t.Fatalf("a dump of the same size and a newer mtime: %v, bound %v", err, j.bound)
	}
	writeLoads(t, path, 4242, 0x1000, 10, 5)
	if err := pollAll(j, 1000, nil); err != nil {
		t.Fatal(err)
	}
	if seq, _ := j.code.lookup(0x1008, 1000); seq != 15 {
		t.Errorf("the live code is generation %d, want 15", seq)
	}
}

// TestPerfmapReplacementRefused: a perf map written anew whose new file
// cannot be taken (replaced again while it was opened, so it has no link
// left; or a link) leaves the map as last read, and the daemon follows
// the next good one: a JIT renaming its map over and over in a race with
// the daemon's open is not given up.
func TestPerfmapReplacementRefused(t *testing.T) {
	dir := t.TempDir()
	mp := filepath.Join(dir, "perf-4243.map")
	os.WriteFile(mp, []byte("1000 40 fib\n"), 0o600)
	f, _ := os.Open(mp)
	session := t.TempDir()
	root, _ := os.OpenRoot(session)
	defer root.Close()
	sess := func() (*os.Root, error) { return root, nil }
	j := &jitProc{pid: 4243, handler: "perfmap", path: mp, f: f, snap: 1, p: anon.Process{PID: 4243, NSPID: 4243, UID: trust.UnknownOwner}}
	defer j.close()
	if err := pollAll(j, 100, sess); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	os.WriteFile(other, []byte("1000 40 collatz\n"), 0o600)
	os.Remove(mp)
	os.Symlink(other, mp)
	if err := pollAll(j, 200, sess); err == nil || j.bound != nil {
		t.Errorf("a link for the map: %v, bound %v; want an error, and the map followed on", err, j.bound)
	}
	if seq, _ := j.code.lookup(0x1010, 250); seq != 1 {
		t.Errorf("after the refused replacement the code is generation %d, want 1 (fib)", seq)
	}
	os.Remove(mp)
	os.WriteFile(mp+".tmp", []byte("1000 40 sum\n"), 0o600)
	os.Rename(mp+".tmp", mp)
	if err := pollAll(j, 300, sess); err != nil {
		t.Fatal(err)
	}
	if seq, _ := j.code.lookup(0x1010, 350); seq != 2 {
		t.Errorf("after a good replacement the code is generation %d, want 2 (sum)", seq)
	}
}
