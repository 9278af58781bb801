package pathtime

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jitprof/jitprof/internal/pypylog"
)

// InnerBridges is seed 002's choice for bridges that jump back to the loop
// they leave.
type InnerBridges int

const (
	// IgnoreInner charges an inner bridge's time to its loop: the seed's
	// first solution, where a PyPy logs no event when a loop takes one.
	IgnoreInner InnerBridges = iota
	// RecordInner keeps each inner bridge a region of its own.
	RecordInner
)

// ParseInnerBridges parses --inner-bridges' value.
func ParseInnerBridges(s string) (InnerBridges, error) {
	switch s {
	case "ignore":
		return IgnoreInner, nil
	case "record":
		return RecordInner, nil
	}
	return 0, fmt.Errorf("inner bridges: want ignore or record, not %q", s)
}

// PyPy is the regions of a PYPYLOG and the policy that accounts its
// jit-profile-enter and jit-profile-exit events.
type PyPy struct {
	log   *pypylog.Log
	names []string // of the log's codes
	// other names events that name no code of the log ("loop1" in the
	// seed's example, where the log has no jit-backend-addr): regions
	// numbered after the codes.
	other map[string]uint64
	// Options has Merge (with IgnoreInner) and Calls set.
	Options Options
}

// NewPyPy prepares the accounting of l's profile events: every code of
// the log (a loop or bridge of jit-backend-addr) is a region; with
// IgnoreInner, inner bridges are merged into their loop; entering a loop
// that the current region calls with call_assembler is a call, charged to
// the caller as the seed asks.
func NewPyPy(l *pypylog.Log, inner InnerBridges) *PyPy {
	p := &PyPy{log: l, names: l.Names(), other: map[string]uint64{}}
	p.Options.Merge = map[uint64]uint64{}
	calls := map[uint64][]int{} // region -> loops its trace calls
	for i, c := range l.Codes {
		r := uint64(i)
		if inner == IgnoreInner && l.Inner(i) {
			if root, ok := l.Root(i); ok {
				p.Options.Merge[r] = uint64(root)
			}
		}
		if c.Trace >= 0 && len(l.Traces[c.Trace].Calls) > 0 {
			calls[r] = l.Traces[c.Trace].Calls
		}
	}
	p.Options.Calls = func(caller, callee uint64) bool {
		if callee >= uint64(len(l.Codes)) || l.Codes[callee].Bridge {
			return false
		}
		for _, n := range calls[caller] {
			if n == l.Codes[callee].Loop {
				return true
			}
		}
		return false
	}
	return p
}

// Event maps a profile event onto an Event. Its body names a loop as
// PyPy's logs do, "Loop 3" (with or without its "(name)") or as the seed's
// example does, "loop3"; a bridge as "bridge out of Guard 0x..."; anything
// else is a region of that name.
func (p *PyPy) Event(e pypylog.ProfileEvent) Event {
	ev := Event{Time: e.Time, Thread: uint64(int64(e.Thread)), Exit: e.Exit}
	if e.Exit {
		return ev
	}
	ev.Region = p.region(e.Name)
	return ev
}

func (p *PyPy) region(name string) uint64 {
	if i, ok := p.code(name); ok {
		return uint64(i)
	}
	r, ok := p.other[name]
	if !ok {
		r = uint64(len(p.log.Codes) + len(p.other))
		p.other[name] = r
	}
	return r
}

// code finds the code an event's name means: the last one the log gives
// for that loop number or guard (a loop re-compiled later has a new
// number, so the last is the one that ran).
func (p *PyPy) code(name string) (int, bool) {
	lower := strings.ToLower(name)
	if g, ok := strings.CutPrefix(lower, "bridge out of guard "); ok {
		g, _, _ = strings.Cut(g, " ")
		guard, err := strconv.ParseUint(strings.TrimPrefix(g, "0x"), 16, 64)
		if err != nil {
			return 0, false
		}
		for i := len(p.log.Codes) - 1; i >= 0; i-- {
			if c := &p.log.Codes[i]; c.Bridge && c.Guard == guard {
				return i, true
			}
		}
		return 0, false
	}
	if n, ok := strings.CutPrefix(lower, "loop"); ok {
		n = strings.TrimSpace(n)
		n, _, _ = strings.Cut(n, " ")
		loop, err := strconv.Atoi(n)
		if err != nil {
			return 0, false
		}
		for i := len(p.log.Codes) - 1; i >= 0; i-- {
			if c := &p.log.Codes[i]; !c.Bridge && c.Loop == loop {
				return i, true
			}
		}
	}
	return 0, false
}

// Name is region r's name: a code's as reports show it ("f [loop 3]",
// "f [bridge 1 of loop 3]"), or the event's own.
func (p *PyPy) Name(r uint64) string {
	if r < uint64(len(p.names)) {
		return p.names[r]
	}
	for name, o := range p.other {
		if o == r {
			return name
		}
	}
	return "region " + strconv.FormatUint(r, 10)
}

// Code returns the code region r is, false for a region the log does not
// describe.
func (p *PyPy) Code(r uint64) (*pypylog.Code, bool) {
	if r < uint64(len(p.log.Codes)) {
		return &p.log.Codes[r], true
	}
	return nil, false
}
