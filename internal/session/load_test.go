package session

import (
	"reflect"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/perfdata"
)

// TestParallelLoadIsSequential loads recordings in one part and in many
// parts read by several workers: the merged profile must be the same,
// entry for entry and id for id.
func TestParallelLoadIsSequential(t *testing.T) {
	for _, c := range replayCases {
		t.Run(c.name, func(t *testing.T) { sameInParts(t, synth(t, c.recs)) })
	}
	for name, args := range map[string][]string{
		"system":  {"-a", "-g", "-F", "4000", "--", "BUSY", "100", "2", "1"},
		"process": {"-g", "-F", "4000", "--", "BUSY", "100", "1", "1"},
	} {
		t.Run(name, func(t *testing.T) {
			perftest.Perf(t)
			args[len(args)-4] = perftest.Busy(t)
			f, err := perfdata.Open(perftest.Record(t, name+".data", args...))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sameInParts(t, f)
		})
	}
}

func sameInParts(t *testing.T, f *perfdata.File) {
	tl, err := BuildTimeline(f)
	if err != nil {
		t.Fatal(err)
	}
	sym := symbolize.New(symbolize.Options{})
	for _, opts := range []Options{{}, {LeafOnly: true}, {Lines: true, Addresses: true}} {
		opts.Symbolizer = sym
		want, err := load(f, opts, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if parts := len(tl.chunks(f, 1000)); parts < 2 {
			t.Fatalf("1000 parts asked for, %d made", parts)
		}
		for _, n := range []int{2, 7, 1000} {
			got, err := load(f, opts, n, 3)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%+v: the profile read in %d parts differs from the one read in one (%d entries, want %d)",
					opts, n, len(got.Entries), len(want.Entries))
			}
		}
	}
}
