package daemon

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/jitdump"
	"github.com/jitprof/jitprof/internal/trust"
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
	j.f = f
	sess := func(int) (string, error) { return session, nil }
	if err := j.poll(100, sess); err != nil {
		t.Fatal(err)
	}
	// Re-generated over fib; the map written anew and renamed over the
	// old, which the daemon notices.
	write("1000 40 fib\n2000 40 sum\n1000 40 collatz\n")
	if err := j.poll(200, sess); err != nil {
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
	if err := j.poll(100, nil); err == nil || j.handler != "" || !j.rejected[path] {
		t.Errorf("poll of another process's dump: %v, handler %q, rejected %v", err, j.handler, j.rejected)
	}
	if _, ok := j.code.lookup(0x1008, 200); ok {
		t.Error("the stale dump's code is in the table")
	}
}
