package main

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

const cppSource = `#include <vector>
#include <cstdio>
namespace foo { __attribute__((noinline)) long bar(int x) { long s = 0; for (int i = 0; i < x; i++) s += i * 3; return s; } }
template <typename T> __attribute__((noinline)) T twice(T x) { volatile T s = 0; for (int i = 0; i < 20000000; i++) s += x; return s; }
struct K { __attribute__((noinline)) long run(std::vector<int> &v) const { long s = 0; for (int r = 0; r < 200; r++) for (int x : v) s += x ^ r; return s; } };
int main() { std::vector<int> v(100000, 3); K k; long s = 0; for (int i = 0; i < 3; i++) { s += foo::bar(50000000); s += twice<long>(i); s += k.run(v); } printf("%ld\n", s); }
`

// TestCppNamesAgreeWithPerf: C++ symbols are named as perf names them
// (demangled, without parameter lists), with perf's shares.
func TestCppNamesAgreeWithPerf(t *testing.T) {
	gxx := perftest.Need(t, "g++")
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "cpp.cc"), filepath.Join(dir, "cpp")
	if err := os.WriteFile(src, []byte(cppSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gxx, "-O1", "-fno-omit-frame-pointer", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	data := perftest.Record(t, "cpp.data", "-e", "cpu-clock", "--", bin)
	perfOut := perftest.Run(t, perftest.Perf(t), "report", "-i", data, "--stdio", "--no-children", "-g", "none", "--sort", "sym", "-q", "--percent-limit", "0")
	jitprof, _ := buildTools(t)
	ours := symShares(runOK(t, jitprof, "report", "-i", data, "--sort", "sym"))
	theirs := symShares(perfOut)
	for _, name := range []string{"twice<long>", "foo::bar", "K::run"} {
		if theirs[name] < 1 {
			t.Fatalf("perf does not show %s over 1%%: %v", name, theirs)
		}
		if math.Abs(ours[name]-theirs[name]) > 0.1 {
			t.Errorf("%s: jitprof %.2f%%, perf %.2f%%", name, ours[name], theirs[name])
		}
	}
}
