package pathtime

import (
	"reflect"
	"strings"
	"testing"
)

func enter(t, th, r uint64) Event { return Event{Time: t, Thread: th, Region: r} }
func exit(t, th uint64) Event     { return Event{Time: t, Thread: th, Exit: true} }

func TestCompute(t *testing.T) {
	cases := []struct {
		name      string
		events    []Event
		opts      Options
		want      map[uint64]uint64 // region -> time
		unmatched uint64
	}{
		{
			// The example of seed 002: loop1 (an entry bridge) at 100,
			// JUMP to loop0 at 200, guard failure at 500.
			name:   "seed 002 implicit exit",
			events: []Event{enter(100, 1, 1), enter(200, 1, 0), exit(500, 1)},
			want:   map[uint64]uint64{1: 100, 0: 300},
		},
		{
			name:   "nested call charged to the caller",
			events: []Event{enter(0, 1, 7), enter(10, 1, 8), exit(40, 1), exit(50, 1)},
			opts:   Options{Nested: true},
			want:   map[uint64]uint64{7: 50},
		},
		{
			name:      "without Nested the same events are a jump",
			events:    []Event{enter(0, 1, 7), enter(10, 1, 8), exit(40, 1), exit(50, 1)},
			want:      map[uint64]uint64{7: 10, 8: 30},
			unmatched: 1,
		},
		{
			name:   "inner bridge merged into its loop",
			events: []Event{enter(0, 1, 3), enter(10, 1, 4), enter(15, 1, 3), exit(30, 1)},
			opts:   Options{Merge: map[uint64]uint64{4: 3}},
			want:   map[uint64]uint64{3: 30},
		},
		{
			name:   "threads interleave independently",
			events: []Event{enter(0, 1, 1), enter(5, 2, 2), exit(10, 1), enter(12, 1, 2), exit(20, 2), exit(22, 1)},
			want:   map[uint64]uint64{1: 10, 2: 25},
		},
		{
			name:   "open region charged to End",
			events: []Event{enter(0, 1, 9)},
			opts:   Options{End: 70},
			want:   map[uint64]uint64{9: 70},
		},
		{
			name:   "merge cycle does not hang",
			events: []Event{enter(0, 1, 1), exit(5, 1)},
			opts:   Options{Merge: map[uint64]uint64{1: 2, 2: 1}},
			want:   map[uint64]uint64{1: 5},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Compute(c.events, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := map[uint64]uint64{}
			var sum uint64
			for _, tot := range res.Totals {
				if tot.Time > 0 {
					got[tot.Region] = tot.Time
				}
				sum += tot.Time
			}
			if len(got) != len(c.want) {
				t.Fatalf("totals %v, want %v", got, c.want)
			}
			for r, w := range c.want {
				if got[r] != w {
					t.Errorf("region %d: %d, want %d (all %v)", r, got[r], w, got)
				}
			}
			if sum != res.Total {
				t.Errorf("Total %d, sum of totals %d", res.Total, sum)
			}
			if res.Unmatched != c.unmatched {
				t.Errorf("unmatched %d, want %d", res.Unmatched, c.unmatched)
			}
		})
	}
}

func TestTimeGoesBack(t *testing.T) {
	_, err := Compute([]Event{enter(100, 1, 1), exit(50, 1)}, Options{})
	if err == nil || !strings.Contains(err.Error(), "time goes back from 100 to 50") {
		t.Errorf("err %v", err)
	}
}

func TestPercent(t *testing.T) {
	res, err := Compute([]Event{enter(0, 1, 1), enter(25, 1, 2), exit(100, 1)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Totals[0].Region != 2 || res.Totals[0].Percent != 75 || res.Totals[1].Percent != 25 {
		t.Errorf("%+v", res.Totals)
	}
	if res.Totals[0].Entries != 1 {
		t.Errorf("entries %d", res.Totals[0].Entries)
	}
}

// TestSamples: samples are charged to the region their thread was in when
// taken (the outermost with Nested), never to time outside regions or to
// another thread's region.
func TestSamples(t *testing.T) {
	events := []Event{enter(100, 1, 1), enter(200, 1, 2), exit(500, 1), enter(300, 2, 1), exit(400, 2)}
	samples := []Sample{
		{Time: 50, Thread: 1, Period: 7},   // before any region
		{Time: 150, Thread: 1, Period: 10}, // region 1
		{Time: 250, Thread: 1, Period: 20}, // region 2 (or 1, nested)
		{Time: 499, Thread: 1, Period: 30}, // region 2 (or 1, nested)
		{Time: 500, Thread: 1, Period: 40}, // at the exit: outside
		{Time: 350, Thread: 2, Period: 50}, // thread 2 in region 1
		{Time: 450, Thread: 2, Period: 60}, // thread 2 outside
		{Time: 250, Thread: 3, Period: 70}, // a thread with no events
	}
	for _, tt := range []struct {
		nested  bool
		samples map[uint64]uint64 // region -> samples
		onCPU   map[uint64]uint64
	}{
		{false, map[uint64]uint64{1: 2, 2: 2}, map[uint64]uint64{1: 60, 2: 50}},
		{true, map[uint64]uint64{1: 4}, map[uint64]uint64{1: 110}},
	} {
		// Samples in any order: the accountant sorts them per thread.
		shuffled := append([]Sample(nil), samples...)
		shuffled[0], shuffled[5] = shuffled[5], shuffled[0]
		res, err := Compute(events, Options{Nested: tt.nested, Samples: shuffled})
		if err != nil {
			t.Fatal(err)
		}
		gotS, gotC := map[uint64]uint64{}, map[uint64]uint64{}
		var sumS, sumC uint64
		for _, tot := range res.Totals {
			if tot.Samples > 0 {
				gotS[tot.Region], gotC[tot.Region] = tot.Samples, tot.OnCPU
			}
			sumS += tot.Samples
			sumC += tot.OnCPU
		}
		if !reflect.DeepEqual(gotS, tt.samples) || !reflect.DeepEqual(gotC, tt.onCPU) {
			t.Errorf("nested %v: samples %v on-CPU %v, want %v %v", tt.nested, gotS, gotC, tt.samples, tt.onCPU)
		}
		if sumS != res.Samples || sumC != res.OnCPU {
			t.Errorf("nested %v: totals %d/%d, sums %d/%d", tt.nested, res.Samples, res.OnCPU, sumS, sumC)
		}
	}
}

// TestAccountantIsCompute: events fed one at a time give Compute's result.
func TestAccountantIsCompute(t *testing.T) {
	events := []Event{enter(100, 1, 1), enter(5, 2, 3), enter(200, 1, 2), exit(50, 2), exit(500, 1)}
	want, err := Compute(events, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := NewAccountant(Options{})
	for _, e := range events {
		if err := a.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := a.Result()
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Accountant: %+v, %v; want %+v", got, err, want)
	}
}

// TestSelf: of the samples charged to a region, Self counts those whose
// address InRegion puts in the region's own code.
func TestSelf(t *testing.T) {
	events := []Event{enter(100, 1, 1), exit(200, 1), enter(300, 1, 2), exit(400, 1)}
	samples := []Sample{
		{Time: 110, Thread: 1, IP: 0x1000}, // region 1's code
		{Time: 120, Thread: 1, IP: 0x9000}, // something region 1 called
		{Time: 310, Thread: 1, IP: 0x2000}, // region 2's code
		{Time: 320, Thread: 1, IP: 0x1000}, // region 1's code, while in 2
		{Time: 250, Thread: 1, IP: 0x1000}, // outside every region
	}
	code := map[uint64]uint64{1: 0x1000, 2: 0x2000}
	res, err := Compute(events, Options{Samples: samples, InRegion: func(r, ip uint64) bool { return ip >= code[r] && ip < code[r]+0x100 }})
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint64][2]uint64{}
	for _, tot := range res.Totals {
		got[tot.Region] = [2]uint64{tot.Samples, tot.Self}
	}
	if want := map[uint64][2]uint64{1: {2, 1}, 2: {2, 1}}; !reflect.DeepEqual(got, want) {
		t.Errorf("region -> {samples, self}: %v, want %v", got, want)
	}
}
