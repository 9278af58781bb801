package pypylog

import (
	"bytes"
	"os"
	"testing"
)

// FuzzRead: no input makes the reader panic, loop or keep a code whose
// range is empty or huge, and an error always says it is a format error
// or a limit; what Keep keeps of a log reads as the log does.
func FuzzRead(f *testing.F) {
	b, err := os.ReadFile("testdata/bridges.log")
	if err != nil {
		f.Fatal(err)
	}
	// Small seeds: a loop with its trace, a bridge with its trace, the
	// profile events, and cuts.
	first := bytes.Index(b, []byte("debug_merge_point"))
	loop := b[:first+bytes.Index(b[first+1:], []byte("debug_merge_point"))+1]
	loop = append(loop[:len(loop):len(loop)], "[24ff3880b63a2] jit-log-opt-loop}\n"...)
	start := bytes.Index(b, []byte("[24ff388207599] {jit-backend-addr"))
	end := bytes.Index(b, []byte("+110: i11"))
	bridge := append(bytes.Clone(b[start:end]), "[24ff38835ec4c] jit-log-opt-bridge}\n"...)
	f.Add(loop)
	f.Add(bridge)
	f.Add(loop[:len(loop)/2])
	f.Add([]byte("[100] {jit-profile-enter\nloop1 # c\n[101] jit-profile-enter}\n...\n[500] {jit-profile-exit\nloop0\n[501] jit-profile-exit}\n"))
	f.Add([]byte("0# [1] {a\n1# [2] {b\n0# [3] a}\n1# [4] b}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opts := range []Options{{}, {Ops: true}} {
			l, err := Read(bytes.NewReader(data), opts)
			if err != nil {
				continue
			}
			for _, c := range l.Codes {
				if c.End <= c.Start || c.End-c.Start > MaxCode || c.Block > c.Start {
					t.Fatalf("code %+v", c)
				}
			}
			for i := range l.Codes {
				l.Root(i)
			}
			for _, tr := range l.Traces {
				tr.PositionAt(100)
			}
			names := l.Names()
			for i := range l.Codes {
				l.Inner(i)
				if names[i] == "" {
					t.Fatalf("code %d has no name", i)
				}
			}
			// What record embeds (Keep) reads as the log does.
			k, err := Read(bytes.NewReader(Keep(data)), opts)
			if err != nil {
				t.Fatalf("the kept sections do not read: %v", err)
			}
			if len(k.Codes) != len(l.Codes) || len(k.Traces) != len(l.Traces) || len(k.Profile) != len(l.Profile) {
				t.Fatalf("kept: %d codes, %d traces, %d events; the log: %d, %d, %d", len(k.Codes), len(k.Traces), len(k.Profile), len(l.Codes), len(l.Traces), len(l.Profile))
			}
		}
	})
}

// FuzzFollow: a Follower fed a log in two pieces cut anywhere gives the
// codes and names Read gives, whenever Read reads the log; it never
// panics or keeps a trace's operations.
func FuzzFollow(f *testing.F) {
	b, err := os.ReadFile("testdata/bridges.log")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b[:4096], uint16(100))
	f.Add(b[len(b)/2:], uint16(3000))
	f.Add([]byte("[10] {jit-backend-addr\nLoop 0 (f;/x.py:1-2~#0 FOR_ITER) has address 0x1000 to 0x1100 (bootstrap 0x1000)\n[11] jit-backend-addr}\n"), uint16(40))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		codes, names, ferr := follow(t, data, []int{int(cut)})
		l, err := Read(bytes.NewReader(data), Options{})
		if err != nil {
			return // Read parses merge points the Follower skips
		}
		if ferr != nil {
			t.Fatalf("Read reads the log, the Follower fails: %v", ferr)
		}
		sameCodes(t, codes, names, l)
	})
}
