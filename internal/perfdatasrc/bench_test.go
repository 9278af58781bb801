package perfdatasrc

import (
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/perfdata"
)

// BenchmarkLoad loads a big recording (JITPROF_BENCH_DATA, which
// bench/report/run.sh keeps with KEEP=DIR) as the flat and the callgraph
// reports do, each time with a new Symbolizer so that kallsyms and the
// images are loaded as in one run of jitprof report.
func BenchmarkLoad(b *testing.B) {
	path := os.Getenv("JITPROF_BENCH_DATA")
	if path == "" {
		b.Skip("set JITPROF_BENCH_DATA to a perf.data recorded with -a -g (bench/report/run.sh keeps one with KEEP=DIR)")
	}
	f, err := perfdata.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for _, leaf := range []bool{true, false} {
		name := "flat"
		if !leaf {
			name = "callgraph"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				opts := Options{LeafOnly: leaf, Symbolizer: symbolize.New(symbolize.Options{})}
				if _, err := Load(f, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUnwind unwinds the first 20,000 samples of a DWARF recording
// (JITPROF_BENCH_DATA, recorded with --call-graph dwarf, as
// bench/unwind/run.sh does), held in memory, so that only the unwinding
// is timed. It reports the thread's CPU time per sample too: on a shared
// machine the wall time of a niced benchmark is mostly waiting.
func BenchmarkUnwind(b *testing.B) {
	path := os.Getenv("JITPROF_BENCH_DATA")
	if path == "" {
		b.Skip("set JITPROF_BENCH_DATA to a perf.data recorded with --call-graph dwarf")
	}
	f, err := perfdata.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tl, err := BuildTimeline(f)
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{Symbolizer: symbolize.New(symbolize.Options{})}
	u := newUnwinder(f, tl, opts)
	if u == nil {
		b.Skip("no user stacks in the recording")
	}
	var samples []perfdata.Sample
	r := f.Records()
	for r.Next() && len(samples) < 20000 {
		if s, ok := r.Record().(*perfdata.Sample); ok && len(s.StackUser) > 0 {
			c := *s
			c.StackUser = slices.Clone(s.StackUser)
			c.RegsUser = slices.Clone(s.RegsUser)
			c.Callchain = slices.Clone(s.Callchain)
			samples = append(samples, c)
		}
	}
	sw := newStackWalker(u)
	frames := 0
	// Once before timing: the first samples of each image load its table.
	for i := range samples {
		frames += len(sw.callchain(&samples[i]))
	}
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_THREAD, &r0)
	for b.Loop() {
		frames = 0
		for i := range samples {
			frames += len(sw.callchain(&samples[i]))
		}
	}
	syscall.Getrusage(syscall.RUSAGE_THREAD, &r1)
	cpu := r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano()
	b.ReportMetric(float64(cpu)/float64(b.N*len(samples)), "cpu-ns/sample")
	b.ReportMetric(float64(frames)/float64(len(samples)), "frames/sample")
}
