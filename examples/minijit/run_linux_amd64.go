package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"time"

	"github.com/jitprof/jitprof/jitlog"
	"golang.org/x/sys/unix"
)

// jit runs the schedule for opts.Duration of JIT CPU time, printing what it
// compiles where to out, and returns what it measured.
func jit(opts options, out io.Writer) (truth *Truth, err error) {
	// One locked thread compiles and calls, so its CPU clock measures
	// exactly the calls, and the region is never written while code runs.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	lg, err := jitlog.Open(jitlog.Options{Dir: opts.JitlogDir, Name: "minijit", Jitdump: opts.Jitdump})
	if err != nil {
		return nil, fmt.Errorf("minijit: %w", err)
	}
	defer func() { err = errors.Join(err, lg.Close()) }()
	c, err := newCache(numSlots, slotSize)
	if err != nil {
		return nil, fmt.Errorf("minijit: %w", err)
	}
	defer func() { err = errors.Join(err, c.close()) }()
	fmt.Fprintf(out, "minijit: pid %d, code cache %#x (%d slots of %d bytes), jitlog %s\n",
		os.Getpid(), c.addr(0), c.slots(), slotSize, lg.Path())

	r := &runner{c: c, lg: lg, tid: uint32(unix.Gettid()), truth: &Truth{PID: os.Getpid()}}
	if opts.PerfMap {
		if r.perfMap, err = createPerfMap(fmt.Sprintf("/tmp/perf-%d.map", os.Getpid())); err != nil {
			return nil, fmt.Errorf("minijit: %w", err)
		}
		defer func() { err = errors.Join(err, r.perfMap.Close()) }()
	}
	r.perCall = min(max(opts.Duration.Nanoseconds()/2000, int64(20*time.Microsecond)), int64(time.Millisecond))
	live := make([]*Generation, numSlots)
	// Code compiled and replaced before the schedule (never called)
	// shifts every later sequence number, as a real JIT's numbers shift
	// with what it compiled first.
	for range opts.Prelude {
		prelude := fib
		prelude.Name = "prelude"
		g, err := r.load(run{Slot: 0, Prog: prelude}, live[0])
		if err != nil {
			return nil, err
		}
		live[0] = g
	}
	var gens []*Generation
	cum := 0.0
	for i, ph := range schedule {
		fmt.Fprintf(out, "phase %d:\n", i+1)
		var weights float64
		for _, rn := range ph.Runs {
			weights += rn.Weight
		}
		now := make([]*Generation, 0, len(ph.Runs))
		for _, rn := range ph.Runs {
			g, err := r.load(rn, live[rn.Slot])
			if err != nil {
				return nil, err
			}
			g.Target = 100 * ph.Share * rn.Weight / weights
			fmt.Fprintf(out, "  slot %d at %#x: %-12s seq %-3d %3d bytes, %4.1f%% of JIT time\n",
				g.Slot, g.Addr, g.Name, g.Seq, g.Size, g.Target)
			live[rn.Slot] = g
			now = append(now, g)
			gens = append(gens, g)
		}
		for _, g := range now {
			r.calibrate(g)
		}
		cum += ph.Share
		end := int64(cum * float64(opts.Duration.Nanoseconds()))
		for r.truth.CPUNs < end {
			// The generation furthest behind its share runs next, so the
			// measured split follows the schedule to within one call.
			next := now[0]
			for _, g := range now[1:] {
				if float64(g.CPUNs)/g.Target < float64(next.CPUNs)/next.Target {
					next = g
				}
			}
			r.call(next, next.Arg)
		}
	}
	for _, g := range live {
		if err := lg.CodeUnload(g.Seq); err != nil {
			return nil, fmt.Errorf("minijit: unload %s: %w", g.Name, err)
		}
	}
	for _, g := range gens {
		g.Share = 100 * float64(g.CPUNs) / float64(r.truth.CPUNs)
		r.truth.Generations = append(r.truth.Generations, *g)
	}
	return r.truth, nil
}

type runner struct {
	c       *cache
	lg      *jitlog.Logger
	tid     uint32
	truth   *Truth
	perCall int64    // CPU ns a call should take
	perfMap *os.File // nil unless -perfmap
}

// load compiles rn into its slot, replacing old (nil if the slot is empty),
// and logs the unload of old and the load of the new generation.
func (r *runner) load(rn run, old *Generation) (*Generation, error) {
	code, err := Compile(rn.Prog)
	if err != nil {
		return nil, fmt.Errorf("minijit: %w", err)
	}
	if old != nil {
		if err := r.lg.CodeUnload(old.Seq); err != nil {
			return nil, fmt.Errorf("minijit: unload %s: %w", old.Name, err)
		}
	}
	addr, err := r.c.write(rn.Slot, code)
	if err != nil {
		return nil, fmt.Errorf("minijit: load %s: %w", rn.Prog.Name, err)
	}
	seq, err := r.lg.CodeLoad(addr, len(code), rn.Prog.Name, &jitlog.Load{Code: code})
	if err != nil {
		return nil, fmt.Errorf("minijit: load %s: %w", rn.Prog.Name, err)
	}
	if r.perfMap != nil {
		// One write per line, so a reader never sees half of one.
		if _, err := fmt.Fprintf(r.perfMap, "%x %x %s\n", addr, len(code), rn.Prog.Name); err != nil {
			return nil, fmt.Errorf("minijit: perf map: %w", err)
		}
	}
	return &Generation{Name: rn.Prog.Name, Seq: seq, Slot: rn.Slot, Addr: uint64(addr), Size: len(code)}, nil
}

// calibrate finds the argument that makes a call of g take about
// r.perCall of CPU time. Its calls count like any other. Each argument is
// timed three times and the fastest call counts: on a loaded virtual machine
// a preempted vCPU is charged to the thread's CPU clock, and one such call
// once calibrated fib to calls a hundred times too short, whose time went
// to the clock and logging around them rather than to the generated code.
func (r *runner) calibrate(g *Generation) {
	arg := uint64(256)
	for {
		ns := min(r.call(g, arg), r.call(g, arg), r.call(g, arg))
		if ns >= r.perCall/8 {
			g.Arg = max(1, uint64(float64(arg)*float64(r.perCall)/float64(ns)))
			return
		}
		arg *= 4
	}
}

// call runs g on arg and charges it the thread CPU time the call took.
func (r *runner) call(g *Generation, arg uint64) int64 {
	// Enter and Exit make no system call, so they cost the measurement
	// next to nothing; they give profilers region events to check against.
	// They fail only when the database is full, which must not stop the
	// work being profiled.
	r.lg.Enter(r.tid, g.Seq)
	t0 := threadCPU()
	res := r.c.call(g.Slot, arg)
	ns := threadCPU() - t0
	r.lg.Exit(r.tid)
	if arg == g.Arg {
		g.Result = res
	}
	g.Calls++
	g.CPUNs += ns
	r.truth.CPUNs += ns
	return ns
}

// createPerfMap creates the perf map at path, a new file: never one that
// a symbolic link or another user's file put there. A map of our own
// that is there already is an earlier process's of the same pid (maps
// stay after their process exits, as perf reads them later, and pids
// are reused): it is replaced, as V8 replaces it.
func createPerfMap(path string) (*os.File, error) {
	const flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND | os.O_EXCL | unix.O_NOFOLLOW
	f, err := os.OpenFile(path, flags, 0o644)
	if !errors.Is(err, fs.ErrExist) {
		return f, err
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return nil, fmt.Errorf("perf map: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("perf map %s exists and is not a file of this user's: not replaced", path)
	}
	// In a sticky directory such as /tmp only its owner (this user) can
	// remove or rename the name, so what O_EXCL creates next is new.
	if err := os.Remove(path); err != nil {
		return nil, fmt.Errorf("perf map: removing an earlier process's: %w", err)
	}
	return os.OpenFile(path, flags, 0o644)
}
