package replay

import (
	"os"
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
