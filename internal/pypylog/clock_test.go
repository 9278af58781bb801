package pypylog

import (
	"errors"
	"testing"
)

func TestClock(t *testing.T) {
	// A 2.5 GHz counter (0.4 ns per tick) whose rate the monotonic clock
	// sees change a little between the second and third pairs, as NTP
	// slews it.
	pairs := []Pair{
		{Tick: 3_000_000_000, Nanos: 2_000_000_000},
		{Tick: 1_000_000_000, Nanos: 1_200_000_000},
		{Tick: 5_500_000_000, Nanos: 3_000_001_000},
	}
	c, err := NewClock(pairs)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ tick, want uint64 }{
		{1_000_000_000, 1_200_000_000},
		{2_000_000_000, 1_600_000_000},
		{3_000_000_000, 2_000_000_000},
		{4_250_000_000, 2_500_000_500}, // halfway along the second segment
		{0, 800_000_000},               // before the first pair, at the first rate
		{6_500_000_000, 3_400_001_400}, // after the last, at the last rate
		{100, 800_000_040},
	} {
		if got := c.Nanos(tc.tick); got != tc.want {
			t.Errorf("Nanos(%d) = %d, want %d", tc.tick, got, tc.want)
		}
	}
	if r := c.Rate(); r < 0.39999 || r > 0.40001 {
		t.Errorf("rate %g, want 0.4", r)
	}
	// Long before the pairs the answer would be negative.
	early, err := NewClock([]Pair{{Tick: 1 << 40, Nanos: 10}, {Tick: 1<<40 + 1000, Nanos: 1010}})
	if err != nil {
		t.Fatal(err)
	}
	if got := early.Nanos(0); got != 0 {
		t.Errorf("a tick before the clock's zero gives %d", got)
	}
}

func TestClockErrors(t *testing.T) {
	for name, pairs := range map[string][]Pair{
		"none":       nil,
		"one":        {{1, 1}},
		"same tick":  {{1, 1}, {1, 5}},
		"backwards":  {{1, 10}, {100, 5}},
		"standstill": {{1, 10}, {100, 10}},
		"too fast":   {{0, 0}, {1_000_000_000, 1}},
		"too slow":   {{0, 0}, {1, 1_000}},
	} {
		if _, err := NewClock(pairs); !errors.Is(err, ErrClock) {
			t.Errorf("%s: error %v, want ErrClock", name, err)
		}
	}
}
