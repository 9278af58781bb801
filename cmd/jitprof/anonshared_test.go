package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

// sharedJITSource puts a hand-assembled loop, jitloop, in a shared
// anonymous executable mapping, which the kernel names "/dev/zero
// (deleted)" (some JITs keep their code cache so), names it in
// /tmp/perf-PID.map and runs it. Its pid goes to the file argv[2].
const sharedJITSource = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
/* long jitloop(long n) { long s = 0; for (long i = 0; i < n; i++) s += i; return s; } */
static const unsigned char code[] = {
	0x48, 0x31, 0xc0,       /* xor %rax,%rax */
	0x48, 0x31, 0xc9,       /* xor %rcx,%rcx */
	0x48, 0x85, 0xff,       /* test %rdi,%rdi */
	0x7e, 0x0c,             /* jle ret */
	0x48, 0x01, 0xc8,       /* loop: add %rcx,%rax */
	0x48, 0x83, 0xc1, 0x01, /* add $1,%rcx */
	0x48, 0x39, 0xf9,       /* cmp %rdi,%rcx */
	0x7c, 0xf4,             /* jl loop */
	0xc3,                   /* ret */
};
int main(int argc, char **argv) {
	if (argc < 3) return 2;
	FILE *pf = fopen(argv[2], "w");
	if (!pf) { perror(argv[2]); return 1; }
	fprintf(pf, "%d\n", getpid());
	fclose(pf);
	unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) { perror("mmap"); return 1; }
	memcpy(p, code, sizeof code);
	char path[64];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
	FILE *f = fopen(path, "w");
	if (!f) { perror(path); return 1; }
	fprintf(f, "%lx %zx jitloop\n", (unsigned long)p, sizeof code);
	fclose(f);
	long (*fn)(long) = (long (*)(long))p;
	volatile long sink = 0;
	for (long i = atol(argv[1]); i > 0; i--) sink += fn(1000000);
	return 0;
}
`

// TestSharedAnonJIT runs JIT code in a shared anonymous mapping, named
// by a perf map: report --anon-samples must name it as perf report does,
// with the same share, on perf's recording; and jitprof record must take
// the mapping for a JIT's, embedding the perf map, so that the report
// names the code after the map is gone.
func TestSharedAnonJIT(t *testing.T) {
	perf := perftest.Perf(t)
	dir := t.TempDir()
	src, prog := filepath.Join(dir, "sharedjit.c"), filepath.Join(dir, "sharedjit")
	if err := os.WriteFile(src, []byte(sharedJITSource), 0o644); err != nil {
		t.Fatal(err)
	}
	perftest.Run(t, perftest.Need(t, "gcc"), "-O1", "-o", prog, src)
	// run records prog with the recorder args and returns its pid; its
	// perf map goes when the test ends.
	run := func(name string, record func(pidFile string)) int {
		pidFile := filepath.Join(dir, name+".pid")
		record(pidFile)
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("%s: %v", pidFile, err)
		}
		t.Cleanup(func() { os.Remove(fmt.Sprintf("/tmp/perf-%d.map", pid)) })
		return pid
	}
	jitShare := func(data string) float64 {
		t.Helper()
		for _, r := range reportJSON(t, "-i", data, "--anon-samples", "-s", "dso,sym") {
			if r.Keys["sym"] == "jitloop" {
				return r.SelfPercent
			}
		}
		return 0
	}

	perfData := filepath.Join(dir, "perf.data")
	pid := run("perf", func(pidFile string) {
		perftest.Run(t, perf, "record", "-q", "-o", perfData, "--", prog, "300", pidFile)
	})
	want := perfShares(t, perfData, "dso,sym")[fmt.Sprintf("[JIT] tid %d/[.] jitloop", pid)]
	if want < 50 {
		t.Fatalf("perf report gives jitloop %.2f%%, want most samples: %v", want, perfShares(t, perfData, "dso,sym"))
	}
	if got := jitShare(perfData); math.Abs(got-want) > 0.01 {
		t.Errorf("jitloop in a shared anonymous mapping: %.2f%%, perf's %.2f%%", got, want)
	}

	ours := filepath.Join(dir, "jitprof.data")
	pid = run("jitprof", func(pidFile string) {
		if err := runRecord([]string{"-q", "-o", ours, "--", prog, "300", pidFile}); err != nil {
			t.Fatal(err)
		}
	})
	os.Remove(fmt.Sprintf("/tmp/perf-%d.map", pid))
	if got := jitShare(ours); got < 50 {
		t.Errorf("jitloop from the perf map jitprof record embedded: %.2f%%, want most samples", got)
	}
}
