package perftest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/perfdata"
)

// Need returns the path of the named tool, or skips the test with the
// reason when it is missing; on CI it fails instead.
func Need(t testing.TB, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required on CI (installed by .ci/run): %v", tool, err)
		}
		t.Skipf("%s is not installed: %v", tool, err)
	}
	return p
}

// Perf returns the path of Linux perf (see Need).
func Perf(t testing.TB) string { return Need(t, "perf") }

// runLimit bounds a command Run runs: far above what any test's command
// takes on a loaded machine, so that one that hangs fails its test with
// its output instead of stalling the whole suite until go test's timeout.
const runLimit = 5 * time.Minute

// Run runs a command and returns its stdout, failing the test with its
// stderr when it fails or runs for longer than runLimit.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("killed after %v: %w", runLimit, err)
		}
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// Record runs perf record -o DIR/name ARGS and returns the file's path,
// kept when the test fails (see Keep).
func Record(t testing.TB, name string, args ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	Run(t, Perf(t), append([]string{"record", "-q", "-o", out}, args...)...)
	Keep(t, out)
	return out
}

// Keep saves a copy of path, a recording a test compares (or a directory
// of one with its JIT data), when the test
// fails: a sampled run is not repeated at will, and a failure under load
// may be seen once in many runs. The copy goes to $JITPROF_TEST_KEEP, or
// to jitprof-kept in the temporary directory, named for the test, and the
// test's log says where.
func Keep(t testing.TB, path string) {
	t.Helper()
	// Registered after the temporary directory's removal, so run before it.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		dir := os.Getenv("JITPROF_TEST_KEEP")
		if dir == "" {
			dir = filepath.Join(os.TempDir(), "jitprof-kept")
		}
		name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
		dst := filepath.Join(dir, fmt.Sprintf("%s-%d-%s", name, time.Now().Unix(), filepath.Base(path)))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Logf("keeping %s: %v", path, err)
			return
		}
		var err error
		if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
			err = os.CopyFS(dst, os.DirFS(path))
		} else {
			var data []byte
			data, err = os.ReadFile(path)
			if err == nil {
				err = os.WriteFile(dst, data, 0o600)
			}
		}
		if err != nil {
			t.Logf("keeping %s: %v", path, err)
			return
		}
		t.Logf("the recording is kept in %s", dst)
	})
}

var statLine = regexp.MustCompile(`^\s*([A-Z_0-9]+) events:\s+(\d+)`)

// Stats returns the "Aggregated stats" of perf report --stats: the count
// of each record type by perf's name, and TOTAL.
func Stats(t testing.TB, path string) map[string]uint64 {
	t.Helper()
	out := Run(t, Perf(t), "report", "-i", path, "--stats", "--force")
	m := map[string]uint64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	inAgg := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Aggregated stats") {
			inAgg = true
			continue
		}
		if inAgg && strings.HasSuffix(strings.TrimSpace(line), "stats:") {
			break
		}
		if mm := statLine.FindStringSubmatch(line); inAgg && mm != nil {
			n, _ := strconv.ParseUint(mm[2], 10, 64)
			m[mm[1]] = n
		}
	}
	if _, ok := m["TOTAL"]; !ok {
		t.Fatalf("perf report --stats on %s printed no totals:\n%s", path, out)
	}
	return m
}

// BusySource is a CPU-bound C workload with two functions whose time
// splits about 1:2, built with frame pointers so -g callchains are whole.
// Each thread works until it has used its CPU time (the first argument,
// in units of 3 ms), not for a count of calls: cpu-clock and task-clock
// sample by CPU time, so a run has the same number of samples on a
// machine several times faster or slower than this one, loaded or not.
const BusySource = `#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
__attribute__((noinline)) double work_a(long n) { double s = 0; for (long i = 0; i < n; i++) s += i * 0.5; return s; }
__attribute__((noinline)) double work_b(long n) { double s = 0; for (long i = 0; i < n; i++) s += i * 0.25 + 1; return s; }
__attribute__((noinline)) double outer(long n) { return work_a(n) + work_b(2 * n); }
static long iters = 100;
/* volatile, so the compiler can neither drop nor hoist the pure work. */
static volatile double sink;
static volatile long step = 1000000;
static double thread_cpu_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
static void *thread_main(void *arg) {
	double end = thread_cpu_ms() + 3.0 * iters;
	do sink += outer(step); while (thread_cpu_ms() < end);
	return arg;
}
int main(int argc, char **argv) {
	if (argc > 1) iters = atol(argv[1]);
	int threads = argc > 2 ? atoi(argv[2]) : 0;
	int fork_exec = argc > 3 ? atoi(argv[3]) : 0;
	pthread_t tids[16];
	for (int i = 0; i < threads && i < 16; i++) pthread_create(&tids[i], NULL, thread_main, NULL);
	if (fork_exec) {
		pid_t p = fork();
		if (p == 0) { char n[32]; snprintf(n, sizeof n, "%ld", iters); execl("` + linux.SelfExe + `", argv[0], n, (char *)NULL); _exit(127); }
		waitpid(p, NULL, 0);
	}
	thread_main(NULL);
	for (int i = 0; i < threads && i < 16; i++) pthread_join(tids[i], NULL);
	return 0;
}
`

// busyFlags build the workload with frame pointers and DWARF.
var busyFlags = []string{"-O1", "-g", "-fno-omit-frame-pointer", "-pthread"}

// AnonJITSource is the smallest JIT: it copies a counting loop into
// anonymous memory mapped read-write-execute and runs it, so its samples
// land in //anon memory as a JIT's do. Arguments: seconds to run (0 or
// none: until killed), and "map" to write /tmp/perf-PID.map naming the
// code jit_spin, as a JIT writes its perf map. It prints "ready PID ADDR"
// once the code runs.
const AnonJITSource = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 0;
	/* mov rcx, rdi; 1: dec rcx; jnz 1b; ret */
	static const unsigned char loop[] = {0x48, 0x89, 0xf9, 0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3};
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) { perror("mmap"); return 1; }
	memcpy(code, loop, sizeof loop);
	if (argc > 2 && strcmp(argv[2], "map") == 0) {
		char path[64];
		snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
		FILE *f = fopen(path, "w");
		if (!f) { perror(path); return 1; }
		fprintf(f, "%lx %x jit_spin\n", (unsigned long)code, (unsigned)sizeof loop);
		fclose(f);
	}
	printf("ready %d %p\n", (int)getpid(), (void *)code);
	fflush(stdout);
	void (*run)(long) = (void (*)(long))code;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		run(20000000);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (secs > 0 && (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= secs) return 0;
	}
}
`

// CallsSource is a CPU-bound C workload with a known call structure:
// main calls call_a three times for each call of call_b, and both call
// spin with the same work, so spin's time splits 3:1 between its two
// callers. Frame pointers and no sibling calls keep every caller in the
// callchains; spin ends with a call so that it has a frame too (gcc 12
// gives a leaf none, whatever the flags, and a leaf's caller drops out
// of its callchains). Argument: ms of CPU time to use (whole rounds of
// four calls, so the split stays 3:1), as BusySource bounds its run.
const CallsSource = `#include <stdlib.h>
#include <time.h>
static volatile double sink;
__attribute__((noinline)) double done(double s) { return s; }
__attribute__((noinline)) double spin(long n) { double s = 0; for (long i = 0; i < n; i++) s += i * 0.5; return done(s); }
__attribute__((noinline)) double call_a(long n) { double s = spin(n); sink += 1; return s; }
__attribute__((noinline)) double call_b(long n) { double s = spin(n); sink += 1; return s; }
static double cpu_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
int main(int argc, char **argv) {
	double end = cpu_ms() + (argc > 1 ? atof(argv[1]) : 100);
	do
		for (int j = 0; j < 4; j++) sink += j < 3 ? call_a(250000) : call_b(250000);
	while (cpu_ms() < end);
	return 0;
}
`

// DWARFSource is a workload for DWARF call graphs, built -O2
// -fomit-frame-pointer: no function keeps a frame pointer, so its callers
// are found only by unwinding the stack with .eh_frame, and through libc,
// whose qsort calls back into cmp. main calls sort_a three times for each
// call of sort_b, and both sort the same kind of array, so qsort's and
// cmp's time splits 3:1 between them; mix (a loop of its own) takes about
// as long as a sort. Argument: milliseconds of CPU time to run for
// (bounded by CPU time, the run has the same number of samples on any
// machine, loaded or not); -N runs N rounds instead, a fixed amount of
// work for the benchmarks (bench/unwind).
const DWARFSource = `#include <stdlib.h>
#include <time.h>
static volatile long sink;
static double cpu_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
__attribute__((noinline)) static int cmp(const void *a, const void *b) {
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}
__attribute__((noinline)) static void fill(long *v, int n, unsigned long seed) {
	for (int i = 0; i < n; i++) { seed = seed * 6364136223846793005UL + 1442695040888963407UL; v[i] = (long)(seed >> 17); }
}
__attribute__((noinline)) void sort_a(long *v, int n, unsigned long seed) { fill(v, n, seed); qsort(v, n, sizeof *v, cmp); sink += v[n / 2]; }
__attribute__((noinline)) void sort_b(long *v, int n, unsigned long seed) { fill(v, n, seed); qsort(v, n, sizeof *v, cmp); sink += v[n / 3]; }
__attribute__((noinline)) void mix(unsigned long seed) {
	unsigned long x = seed;
	for (int i = 0; i < 400000; i++) x = (x ^ (x >> 13)) * 0x9e3779b97f4a7c15UL + (unsigned long)i;
	sink += (long)x;
}
int main(int argc, char **argv) {
	double ms = argc > 1 ? atof(argv[1]) : 1000;
	enum { N = 20000 };
	long *v = malloc(N * sizeof *v);
	double end = cpu_ms() + ms;
	for (unsigned long k = 1; ms >= 0 ? cpu_ms() < end : k <= -ms; k++) {
		if (k % 4 == 0) sort_b(v, N, k); else sort_a(v, N, k);
		if (k % 4 == 0) mix(k);
	}
	return 0;
}
`

// cProgram is a C workload built once per test binary.
type cProgram struct {
	name, src string
	flags     []string
	once      sync.Once
	path, err string
}

var (
	busy    = &cProgram{name: "busy", src: BusySource, flags: busyFlags}
	anonJIT = &cProgram{name: "anonjit", src: AnonJITSource, flags: []string{"-O1"}}
	calls   = &cProgram{name: "calls", src: CallsSource, flags: []string{"-O1", "-g", "-fno-omit-frame-pointer", "-fno-optimize-sibling-calls"}}
	dwarf   = &cProgram{name: "dwarf", src: DWARFSource, flags: []string{"-O2", "-g", "-fomit-frame-pointer"}}
)

// DWARF builds DWARFSource once per test binary and returns its path.
func DWARF(t testing.TB) string { return dwarf.build(t) }

// Calls builds CallsSource once per test binary and returns its path.
func Calls(t testing.TB) string { return calls.build(t) }

// Busy builds BusySource once per test binary and returns its path. Its
// arguments: CPU time per thread in units of 3 ms (100: 0.3 s), extra
// threads, and 1 to fork and exec itself once.
func Busy(t testing.TB) string { return busy.build(t) }

// AnonJIT builds AnonJITSource once per test binary and returns its path,
// in a directory every user can read, so that tests may run it as another
// user.
func AnonJIT(t testing.TB) string { return anonJIT.build(t) }

func (p *cProgram) build(t testing.TB) string {
	t.Helper()
	cc := Need(t, "gcc")
	p.once.Do(func() {
		// One build per version of the source, shared by every test
		// binary and kept between runs: nothing piles up in /tmp, and a
		// system-wide test never sees the workload's binary vanish.
		sum := sha256.Sum256([]byte(p.src + strings.Join(p.flags, " ")))
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("jitprof-%s-%x", p.name, sum[:6]))
		p.path = filepath.Join(dir, p.name)
		if _, err := os.Stat(p.path); err == nil {
			return
		}
		// The source stays beside the binary: its DWARF names it, and
		// annotate tests print its lines.
		src := filepath.Join(dir, p.name+".c")
		tmp := fmt.Sprintf("%s.%d", p.path, os.Getpid())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			p.err = err.Error()
			return
		}
		// Rename is atomic: test binaries building at once each install
		// whole files.
		if err := os.WriteFile(tmp+".c", []byte(p.src), 0o644); err != nil {
			p.err = err.Error()
			return
		}
		if err := os.Rename(tmp+".c", src); err != nil {
			p.err = err.Error()
			return
		}
		out, err := exec.Command(cc, append(p.flags, "-o", tmp, src)...).CombinedOutput()
		if err != nil {
			p.err = err.Error() + "\n" + string(out)
			return
		}
		if err := os.Rename(tmp, p.path); err != nil {
			p.err = err.Error()
		}
	})
	if p.err != "" {
		t.Fatalf("building the %s workload: %s", p.name, p.err)
	}
	return p.path
}

// NodeFib is a small CPU-bound script for node: V8 compiles fib, first
// interpreted, then optimized.
const NodeFib = `function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
let s = 0;
for (let i = 0; i < 30; i++) s += fib(25);
console.log(s);
`

// Node runs NodeFib, as DIR/fib.js, under node with flags, in a new
// temporary directory DIR, where --perf-prof writes jit-PID.dump; the
// /tmp/perf-PID.map --perf-basic-prof writes is removed when the test
// ends. It returns the script's path and node's pid.
func Node(t testing.TB, flags ...string) (script string, pid int) {
	t.Helper()
	node := Need(t, "node")
	dir := t.TempDir()
	script = filepath.Join(dir, "fib.js")
	if err := os.WriteFile(script, []byte(NodeFib), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, append(flags, script)...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid = cmd.Process.Pid
	t.Cleanup(func() { os.Remove(fmt.Sprintf("/tmp/perf-%d.map", pid)) })
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node %v: %v\n%s", flags, err, out.String())
	}
	return script, pid
}

// WriteData writes a perf.data file of recs, with attrs, into the test's
// temporary directory and returns its path; features, if not nil, sets
// the file's features first.
func WriteData(t testing.TB, attrs []*perfdata.Attr, recs []perfdata.Record, features func(*perfdata.Features)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.data")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := perfdata.NewWriter(f, attrs)
	if err != nil {
		t.Fatal(err)
	}
	if features != nil {
		features(&w.Features)
	}
	for _, r := range recs {
		if err := w.WriteRecord(r); err != nil {
			t.Fatalf("writing %v: %v", r.Type(), err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// OpenData is WriteData, then opens the file, which the test's end closes.
func OpenData(t testing.TB, attrs []*perfdata.Attr, recs []perfdata.Record) *perfdata.File {
	t.Helper()
	f, err := perfdata.Open(WriteData(t, attrs, recs, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
