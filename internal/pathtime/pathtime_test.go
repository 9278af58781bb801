package pathtime

import (
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
