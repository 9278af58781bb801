package anon

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkPerfmapClaim claims the perf map of a Node process past a
// large warm-up, as bench/daemon/server.js's: 150,000 functions, each
// written three times as V8 compiles it again (a name at several
// addresses, named with its address), a third of the names the
// function's own. A daemon claims such a map once, and keeps what it
// built while the map is unchanged: the bytes allocated (B/op) are what
// its heap grows by to claim it, and live-B what it keeps.
func BenchmarkPerfmapClaim(b *testing.B) {
	const pid, fns = 4243, 150000
	root := b.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "tmp"), 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(root, "tmp", fmt.Sprintf("perf-%d.map", pid)))
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	addr := uint64(0x3e0000000)
	for i := range fns {
		for _, tier := range []string{"Eval:~ :1:1", "JS:~ :1:20", fmt.Sprintf("JS:^ fn%d server.js:%d:20", i, i)} {
			fmt.Fprintf(w, "%x %x %s\n", addr, 0xc0, tier)
			addr += 0x100
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	p := &Process{PID: pid, NSPID: pid, Comm: "node", Root: root, UID: os.Getuid(), GID: os.Getgid()}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	var r Resolver
	for b.Loop() {
		p.Reads = &Reads{}
		if r, err = (perfmapHandler{}).Claim(p); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "live-B")
	if s, ok := r.Resolve(0x3e0000000+0x100*3*1000+0x10, 0); !ok || s.Name != "Eval:~ :1:1 [0x3e00bb800]" {
		b.Fatalf("named %+v, %v", s, ok)
	}
}
