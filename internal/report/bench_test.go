package report

import (
	"io"
	"os"
	"testing"

	"github.com/jitprof/jitprof/internal/perfdatasrc"
	"github.com/jitprof/jitprof/perfdata"
)

// benchFile is a big recording for the report benchmarks, from
// bench/report/run.sh (JITPROF_BENCH_DATA); without it they are skipped.
func benchFile(b *testing.B) *perfdata.File {
	path := os.Getenv("JITPROF_BENCH_DATA")
	if path == "" {
		b.Skip("set JITPROF_BENCH_DATA to a perf.data recorded with -a -g (bench/report/run.sh keeps one with KEEP=1)")
	}
	f, err := perfdata.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

func BenchmarkLoad(b *testing.B) {
	f := benchFile(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := perfdatasrc.Load(f, perfdatasrc.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompute(b *testing.B) {
	p, err := perfdatasrc.Load(benchFile(b), perfdatasrc.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"flat", Options{}},
		{"children", Options{Children: true}},
		{"trees", Options{Children: true, Chains: Chains{Graph: true, Caller: true, Threshold: 0.5, MaxStack: 127}}},
	} {
		c.opts.Sort = []string{KeyDSO, KeySym}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if c.opts.Chains.Graph {
					// The trees are made as the report is written.
					if err := Write(io.Discard, p, c.opts); err != nil {
						b.Fatal(err)
					}
					continue
				}
				if _, err := Compute(p, c.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
