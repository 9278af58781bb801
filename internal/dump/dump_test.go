package dump_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/dump"
	"github.com/jitprof/jitprof/internal/golden"
	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/perfdata"
)

// TestGolden prints the committed perf recordings and compares with the
// golden files beside them.
func TestGolden(t *testing.T) {
	cases := []struct {
		file, golden string
		opts         dump.Options
		stream       bool // read the file as a stream, not as a file
	}{
		{"callgraph.data", "callgraph.dump", dump.Options{}, false},
		{"callgraph.data", "callgraph.stats", dump.Options{Stats: true}, false},
		{"pipe.data", "pipe.dump", dump.Options{}, false},
		{"pipe.data", "pipe.header-only", dump.Options{HeaderOnly: true}, false},
		{"pipe.data", "pipe.stream.dump", dump.Options{}, true},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			path := filepath.Join("../../perfdata/testdata", c.file)
			open := perfdata.Open
			if c.stream {
				open = func(path string) (*perfdata.File, error) {
					b, err := os.ReadFile(path)
					if err != nil {
						return nil, err
					}
					return perfdata.NewStream(bytes.NewReader(b))
				}
			}
			f, err := open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var buf bytes.Buffer
			if err := dump.Write(&buf, f, c.opts); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", c.golden), buf.Bytes())
		})
	}
}

// TestStatsAgreeWithPerf compares Count on a fresh perf recording with
// perf report --stats, including lost samples forced by a tiny ring.
func TestStatsAgreeWithPerf(t *testing.T) {
	busy := perftest.Busy(t)
	path := perftest.Record(t, "lost.data", "-e", "cpu-clock", "-c", "20000", "-m", "1", "-g", "--", busy, "10", "1")
	f, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := dump.Count(f)
	if err != nil {
		t.Fatal(err)
	}
	want := perftest.Stats(t, path)
	if st.Total != want["TOTAL"] {
		t.Errorf("total %d, perf says %d", st.Total, want["TOTAL"])
	}
	for typ, n := range st.Counts {
		if want[typ.String()] != n {
			t.Errorf("%v: %d, perf says %d", typ, n, want[typ.String()])
		}
	}
	if st.Counts[perfdata.RecordLost] > 0 && st.LostEvents == 0 {
		t.Errorf("%d LOST records but no lost samples counted", st.Counts[perfdata.RecordLost])
	}
	var buf bytes.Buffer
	f2, _ := perfdata.Open(path)
	defer f2.Close()
	dump.Write(&buf, f2, dump.Options{Stats: true})
	if !strings.Contains(buf.String(), "lost samples: "+strconv.FormatUint(st.LostEvents, 10)) {
		t.Errorf("--stats output does not report the lost samples:\n%s", buf.String())
	}
}
