package daemon

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/jitprof/jitprof/internal/anon"
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
