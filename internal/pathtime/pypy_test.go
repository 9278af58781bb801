package pathtime

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/pypylog"
)

// pypyTotals accounts log's profile events with policy inner and returns
// each region's ticks and entries by name.
func pypyTotals(t *testing.T, log string, inner InnerBridges) (map[string][2]uint64, *Result) {
	t.Helper()
	l, err := pypylog.Read(strings.NewReader(log), pypylog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPyPy(l, inner)
	a := NewAccountant(p.Options)
	for _, e := range l.Profile {
		if err := a.Add(p.Event(e)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := a.Result()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]uint64{}
	for _, tot := range res.Totals {
		got[p.Name(tot.Region)] = [2]uint64{tot.Time, tot.Entries}
	}
	return got, res
}

// TestPyPySeed002 is seed 002's example, exactly: 200-100 ticks in the
// entry bridge (loop1), 500-200 in the loop (loop0), under both policies
// (the example has no bridges). The seed writes its stamps as decimals; a
// log's are hexadecimal, so they are written here as PyPy would.
func TestPyPySeed002(t *testing.T) {
	log := fmt.Sprintf(`[%x] {jit-profile-enter
loop1      # e.g. an entry bridge
[%x] jit-profile-enter}
[%x] {jit-profile-enter
loop0      # JUMP from loop1 to loop0
[%x] jit-profile-enter}
[%x] {jit-profile-exit
loop0      # e.g. because of a failing guard
[%x] jit-profile-exit}
`, 100, 101, 200, 201, 500, 501)
	for _, inner := range []InnerBridges{IgnoreInner, RecordInner} {
		got, res := pypyTotals(t, log, inner)
		want := map[string][2]uint64{"loop1": {100, 1}, "loop0": {300, 1}}
		if fmt.Sprint(got) != fmt.Sprint(want) || res.Total != 400 {
			t.Errorf("policy %d: %v (total %d), want %v", inner, got, res.Total, want)
		}
	}
}

// flowLog is a log as PyPy writes it, with jit-profile events added: loop
// 0 (label TargetToken(10)), an inner bridge out of its guard 0xa0 (jumps
// to TargetToken(10)), a bridge out of its guard 0xb0 that jumps to loop
// 1's label, loop 1 calling loop 2 with call_assembler, and loop 2.
func flowLog(events string) string {
	code := func(n int, name string, addr int) string {
		return fmt.Sprintf("[%x] {jit-backend-addr\nLoop %d (%s;/tmp/f.py:1-2~#12 FOR_ITER) has address 0x%x to 0x%x (bootstrap 0x%x)\n[%x] jit-backend-addr}\n",
			addr, n, name, addr, addr+0x100, addr, addr+1)
	}
	bridge := func(guard, addr int) string {
		return fmt.Sprintf("[%x] {jit-backend-addr\nbridge out of Guard 0x%x has address 0x%x to 0x%x\n[%x] jit-backend-addr}\n", addr, guard, addr, addr+0x80, addr+1)
	}
	return code(0, "f", 0x1000) +
		"[1010] {jit-log-opt-loop\n# Loop 0 (f;/tmp/f.py:1-2~#12 FOR_ITER) : loop with 4 ops\n[p0]\n" +
		"+10: label(p0, descr=TargetToken(10))\n+20: guard_true(i1, descr=<Guard0xa0>) [p0]\n+30: guard_true(i2, descr=<Guard0xb0>) [p0]\n+40: jump(p0, descr=TargetToken(10))\n[1011] jit-log-opt-loop}\n" +
		code(1, "g", 0x2000) +
		"[2010] {jit-log-opt-loop\n# Loop 1 (g;/tmp/f.py:5-6~#12 FOR_ITER) : loop with 3 ops\n[p0]\n" +
		"+10: label(p0, descr=TargetToken(20))\n+20: p1 = call_assembler_r(p0, descr=<Loop2>)\n+40: jump(p0, descr=TargetToken(20))\n[2011] jit-log-opt-loop}\n" +
		code(2, "h", 0x3000) +
		bridge(0xa0, 0x4000) +
		"[4010] {jit-log-opt-bridge\n# bridge out of Guard 0xa0 with 1 ops\n[p0]\n+10: jump(p0, descr=TargetToken(10))\n[4011] jit-log-opt-bridge}\n" +
		bridge(0xb0, 0x5000) +
		"[5010] {jit-log-opt-bridge\n# bridge out of Guard 0xb0 with 1 ops\n[p0]\n+10: jump(p0, descr=TargetToken(20))\n[5011] jit-log-opt-bridge}\n" +
		events
}

// flowEvents: loop 0 takes its inner bridge and comes back, leaves by the
// other bridge to loop 1, which calls loop 2 and returns; later loop 0
// runs again.
const flowEvents = `[10000] {jit-profile-enter
Loop 0
[10001] jit-profile-enter}
[10100] {jit-profile-enter
bridge out of Guard 0xa0
[10101] jit-profile-enter}
[10150] {jit-profile-enter
Loop 0 (f;/tmp/f.py:1-2~#12 FOR_ITER)
[10151] jit-profile-enter}
[10300] {jit-profile-enter
bridge out of Guard 0xb0
[10301] jit-profile-enter}
[10350] {jit-profile-enter
Loop 1
[10351] jit-profile-enter}
[10400] {jit-profile-enter
Loop 2
[10401] jit-profile-enter}
[10600] {jit-profile-exit
Loop 2
[10601] jit-profile-exit}
[10700] {jit-profile-exit
Loop 1
[10701] jit-profile-exit}
[11000] {jit-profile-enter
loop0
[11001] jit-profile-enter}
[11050] {jit-profile-exit
loop0
[11051] jit-profile-exit}
`

// TestPyPyPolicies checks every tick of flowEvents under both policies
// for inner bridges, and call_assembler's time charged to the caller.
func TestPyPyPolicies(t *testing.T) {
	log := flowLog(flowEvents)
	for _, tc := range []struct {
		inner InnerBridges
		want  map[string][2]uint64 // ticks, entries
	}{
		{IgnoreInner, map[string][2]uint64{
			"f [loop 0]":             {0x100 + 0x50 + 0x1b0 + 0x50, 2},
			"f [bridge 2 of loop 0]": {0x50, 1},
			"g [loop 1]":             {0x3b0, 1},
			"h [loop 2]":             {0, 1},
		}},
		{RecordInner, map[string][2]uint64{
			"f [loop 0]":             {0x100 + 0x1b0 + 0x50, 3},
			"f [bridge 1 of loop 0]": {0x50, 1},
			"f [bridge 2 of loop 0]": {0x50, 1},
			"g [loop 1]":             {0x3b0, 1},
			"h [loop 2]":             {0, 1},
		}},
	} {
		got, res := pypyTotals(t, log, tc.inner)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("policy %d:\n got %v\nwant %v", tc.inner, got, tc.want)
		}
		if res.Total != 0x100+0x50+0x1b0+0x50+0x3b0+0x50 || res.Unmatched != 0 {
			t.Errorf("policy %d: total %#x, %d unmatched exits", tc.inner, res.Total, res.Unmatched)
		}
	}
	if _, err := ParseInnerBridges("sometimes"); err == nil {
		t.Error("ParseInnerBridges accepts sometimes")
	}
}
