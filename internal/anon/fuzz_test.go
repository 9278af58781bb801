package anon

import (
	"testing"
)

// FuzzClaim feeds arbitrary bytes to the built-in handlers as embedded
// data: they must refuse or resolve, never panic or hang.
func FuzzClaim(f *testing.F) {
	f.Add(uint8(0), []byte("1000 10 a\n1000 8 b b\n0x2000 0x10 c\n"))
	f.Add(uint8(1), reuseDump(f, 5, 0))
	f.Add(uint8(1), reuseDump(f, 5, 1)[:100])
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		files := []string{"/tmp/perf-5.map", "/tmp/jit-5.dump", "/tmp/jitprof-0/anon.5"}
		hs, err := Select([]string{"perfmap", "jitdump", "jitlog"})
		if err != nil {
			t.Fatal(err)
		}
		p := &Process{PID: 5, Embedded: map[string][]byte{files[int(which)%len(files)]: b}}
		r, _, _ := Claim(hs, p)
		if r == nil {
			return
		}
		for _, a := range []uint64{0, 0x1000, 0x1004, reuseAddr + 8, 1<<64 - 1} {
			for _, tm := range []uint64{0, tFoo, tBar + 5, 1<<64 - 1} {
				if s, ok := r.Resolve(a, tm); ok != s.Found() {
					t.Errorf("Resolve(%#x, %d) = %+v, %v", a, tm, s, ok)
				}
			}
		}
	})
}
