package ingest

import (
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/perfdata"
)

// BenchmarkIngestDWARF counts the first 20,000 samples of a DWARF
// recording (JITPROF_BENCH_DATA, recorded with --call-graph dwarf, as
// bench/ingest/run.sh does), held in memory, into a session in memory
// with their arcs: "unwind" unwinds each sample's user stack as the
// daemon with -g dwarf does, "kernel-chain" counts only the arcs of the
// kernel's part, the cost of a sample without unwinding. It reports the
// thread's CPU time per sample: on a shared machine the wall time of a
// niced benchmark is mostly waiting.
func BenchmarkIngestDWARF(b *testing.B) {
	path := os.Getenv("JITPROF_BENCH_DATA")
	if path == "" {
		b.Skip("set JITPROF_BENCH_DATA to a perf.data recorded with --call-graph dwarf")
	}
	f, err := perfdata.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	// The processes and mappings of the whole recording, as the
	// daemon's tracker holds them when a round's samples are counted.
	procs := process.New()
	var samples []perfdata.Sample
	r := f.Records()
	for r.Next() {
		switch rec := r.Record().(type) {
		case *perfdata.Sample:
			if len(samples) < 20000 {
				c := *rec
				c.StackUser = slices.Clone(rec.StackUser)
				c.RegsUser = slices.Clone(rec.RegsUser)
				c.Callchain = slices.Clone(rec.Callchain)
				samples = append(samples, c)
			}
		default:
			procs.Take(rec)
		}
	}
	if err := r.Err(); err != nil {
		b.Fatal(err)
	}
	for _, unwind := range []bool{true, false} {
		name := "unwind"
		if !unwind {
			name = "kernel-chain"
		}
		b.Run(name, func(b *testing.B) {
			db, err := sampledb.Create(b.TempDir(), sampledb.Options{Events: []sampledb.Event{{Name: "cpu-clock", Count: 4000, Freq: true}}})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			in := New(db, procs, 0)
			in.Forget = func(uint32) {}
			in.CallGraph, in.Unwind = true, unwind
			// Once before timing: the first samples of each image read
			// its table (from the cache directory after the first run).
			for i := range samples {
				in.Add(&samples[i])
			}
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var r0, r1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_THREAD, &r0)
			for b.Loop() {
				for i := range samples {
					in.Add(&samples[i])
				}
			}
			syscall.Getrusage(syscall.RUSAGE_THREAD, &r1)
			cpu := r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano()
			b.ReportMetric(float64(cpu)/float64(b.N*len(samples)), "cpu-ns/sample")
			b.ReportMetric(float64(db.Stats().Samples)/float64((b.N+1)*len(samples)), "counts/sample")
		})
	}
}
