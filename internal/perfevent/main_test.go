package perfevent

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
)

// helperEnv makes the test binary act as a test subject instead of running
// tests; see runHelper.
const helperEnv = "PERFEVENT_TEST_HELPER"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		runHelper(h)
		os.Exit(0)
	}
	// The runtime's poller opens descriptors on first use and keeps them;
	// use it once so they are not counted as leaks.
	if r, w, err := os.Pipe(); err == nil {
		_ = r.SetReadDeadline(time.Now())
		r.Close()
		w.Close()
	}
	before := openFDs()
	code := m.Run()
	if after := openFDs(); code == 0 && len(after) > len(before) {
		fmt.Fprintf(os.Stderr, "leaked file descriptors: before %v, after %v\n", before, after)
		code = 1
	}
	os.Exit(code)
}

func openFDs() []string {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		panic(err)
	}
	var fds []string
	for _, e := range ents {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		fds = append(fds, e.Name()+"->"+target)
	}
	return fds
}

// runHelper is the test subject's main. "spin" burns CPU on the main
// thread; "spin-on=N" does so on CPU N alone; "threads" starts new OS threads that burn CPU and prints their
// tids (first line) so the test can look for their samples; "open-self"
// reports whether it may sample itself with and without the kernel.
func runHelper(mode string) {
	if cpu, ok := strings.CutPrefix(mode, "spin-on="); ok {
		spinOn(cpu)
		return
	}
	switch mode {
	case "spin":
		spin(300 * time.Millisecond)
	case "threads":
		var wg sync.WaitGroup
		tids := make(chan int)
		for range 3 {
			wg.Go(func() {
				runtime.LockOSThread() // exits with the goroutine: a fresh thread each
				tids <- unix.Gettid()
				spin(300 * time.Millisecond)
			})
		}
		var line []string
		for range 3 {
			line = append(line, strconv.Itoa(<-tids))
		}
		fmt.Println(strings.Join(line, " "))
		wg.Wait()
	case "open-self":
		for _, excl := range []bool{true, false} {
			s, err := OpenEvents(Options{Event: mustParse("cpu-clock"), ExcludeKernel: excl, Pages: 8},
				Target{PIDs: []int{os.Getpid()}})
			fmt.Printf("exclude_kernel=%v: %s\n", excl, classify(err))
			if err == nil {
				s.Close()
			}
		}
	default:
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", mode)
		os.Exit(2)
	}
}

func classify(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrPermission):
		return "permission"
	}
	return "error " + err.Error()
}

// spin burns d of this thread's CPU time, so that sample counts do not
// depend on how busy the machine is.
func spin(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n := 0
	for start := threadCPUTime(); threadCPUTime()-start < d; {
		for i := 0; i < 1e5; i++ {
			n += i
		}
	}
	sink.Add(int64(n)) // keeps the loop from being optimised away
}

var sink atomic.Int64

// spinOn burns 300ms of CPU time on the CPU numbered cpu, keeping it busy
// for at least that long, and prints when it began and ended spinning
// there (CLOCK_MONOTONIC ns, the clock of sample times).
func spinOn(cpu string) {
	n, err := strconv.Atoi(cpu)
	if err != nil {
		fmt.Fprintf(os.Stderr, "spin-on: bad cpu %q\n", cpu)
		os.Exit(2)
	}
	runtime.LockOSThread() // the affinity set below is this thread's
	var set unix.CPUSet
	set.Set(n)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		fmt.Fprintf(os.Stderr, "spin-on: pinning to cpu %d: %v\n", n, err)
		os.Exit(2)
	}
	start := monotonicNow()
	spin(300 * time.Millisecond)
	fmt.Println(start, monotonicNow())
}

func monotonicNow() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return uint64(ts.Nano())
}

func threadCPUTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return time.Duration(ts.Nano())
}

func mustParse(spec string) Event {
	ev, err := ParseEvent(spec)
	if err != nil {
		panic(err)
	}
	return ev
}

// requireRoot skips a test that needs privileges this process lacks, except
// in CI, where the runners are root and a skip would hide a failure.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("not root in CI; these tests need root")
	}
	t.Skip("needs root (CAP_PERFMON and setuid)")
}

// userOnly reports whether this process must exclude the kernel to sample.
func userOnly(t *testing.T) bool {
	p, err := linux.Paranoid()
	if err != nil {
		t.Fatal(err)
	}
	return os.Geteuid() != 0 && p >= 2
}
