package dump_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/dump"
	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/perfdata"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestGolden prints the committed perf recordings and compares with the
// golden files beside them.
func TestGolden(t *testing.T) {
	cases := []struct {
		file, golden string
		opts         dump.Options
	}{
		{"callgraph.data", "callgraph.dump", dump.Options{}},
		{"callgraph.data", "callgraph.stats", dump.Options{Stats: true}},
		{"pipe.data", "pipe.dump", dump.Options{}},
		{"pipe.data", "pipe.header-only", dump.Options{HeaderOnly: true}},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			f, err := perfdata.Open(filepath.Join("../../perfdata/testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var buf bytes.Buffer
			if err := dump.Write(&buf, f, c.opts); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", c.golden)
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("output differs from %s (run with -update if the change is intended):\n%s", golden, firstDiff(string(want), buf.String()))
			}
		})
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return "line " + strconv.Itoa(i+1) + ":\n- " + al[i] + "\n+ " + bl[i]
		}
	}
	return "lengths differ: " + strconv.Itoa(len(al)) + " vs " + strconv.Itoa(len(bl)) + " lines"
}

// TestStatsAgreeWithPerf compares Count on a fresh perf recording with
// perf report --stats, including lost samples forced by a tiny ring.
func TestStatsAgreeWithPerf(t *testing.T) {
	busy := perftest.Busy(t)
	path := perftest.Record(t, "lost.data", "-e", "cpu-clock", "-c", "10000", "-m", "1", "-g", "--", busy, "100", "1")
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
