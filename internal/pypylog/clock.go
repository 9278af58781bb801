package pypylog

import (
	"errors"
	"fmt"
	"slices"
)

// Pair is one reading of the time-stamp counter and of CLOCK_MONOTONIC
// (nanoseconds) at the same instant.
type Pair struct {
	Tick, Nanos uint64
}

// Clock turns a log's timestamps into CLOCK_MONOTONIC nanoseconds, the
// clock jitprof record stamps samples with, by the pairs it was made
// from: linearly between two pairs, and beyond the first and last at the
// rate of the nearest two. See the package documentation for where the
// pairs come from.
type Clock struct {
	pairs []Pair
}

// ErrClock is wrapped by NewClock's errors.
var ErrClock = errors.New("unusable TSC calibration")

// Rates outside these bounds (ns per tick: a 10 MHz to a 100 GHz
// counter) are not a TSC's, and a Clock from them would be nonsense.
const (
	minRate = 0.01
	maxRate = 100
)

// NewClock returns the Clock of pairs, which need not be sorted: at least
// two with distinct ticks, both clocks going forward together.
func NewClock(pairs []Pair) (*Clock, error) {
	p := slices.Clone(pairs)
	slices.SortFunc(p, func(a, b Pair) int {
		if a.Tick != b.Tick {
			if a.Tick < b.Tick {
				return -1
			}
			return 1
		}
		return 0
	})
	p = slices.CompactFunc(p, func(a, b Pair) bool { return a.Tick == b.Tick })
	if len(p) < 2 {
		return nil, fmt.Errorf("%d distinct pairs, need two: %w", len(p), ErrClock)
	}
	for i := 1; i < len(p); i++ {
		if p[i].Nanos <= p[i-1].Nanos {
			return nil, fmt.Errorf("the monotonic clock goes back or stands while the TSC goes on: %w", ErrClock)
		}
		if r := rate(p[i-1], p[i]); r < minRate || r > maxRate {
			return nil, fmt.Errorf("%.4g ns per tick is no TSC's rate: %w", r, ErrClock)
		}
	}
	return &Clock{pairs: p}, nil
}

func rate(a, b Pair) float64 {
	return float64(b.Nanos-a.Nanos) / float64(b.Tick-a.Tick)
}

// Nanos returns the CLOCK_MONOTONIC time of tick (0 for a tick so early
// that it would be negative).
func (c *Clock) Nanos(tick uint64) uint64 {
	p := c.pairs
	i, _ := slices.BinarySearchFunc(p, tick, func(q Pair, t uint64) int {
		switch {
		case q.Tick < t:
			return -1
		case q.Tick > t:
			return 1
		}
		return 0
	})
	// Use the segment [i-1, i], clamped to the pairs there are.
	i = min(max(i, 1), len(p)-1)
	a, b := p[i-1], p[i]
	d := float64(int64(tick-a.Tick)) * rate(a, b)
	ns := int64(a.Nanos) + int64(d)
	if ns < 0 {
		return 0
	}
	return uint64(ns)
}

// Rate returns the clock's mean rate, nanoseconds per tick.
func (c *Clock) Rate() float64 { return rate(c.pairs[0], c.pairs[len(c.pairs)-1]) }
