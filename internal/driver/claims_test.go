package driver

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/anonbind"
	"github.com/jitprof/jitprof/internal/trust"
)

// claimsOfASystem is what a system-wide recording gives: one JIT named,
// one whose handler failed while resolving, one whose data is untrusted,
// a handler that hung and was then not asked about two more processes,
// and forty processes without JIT data.
func claimsOfASystem() []anonbind.Claim {
	noData := func(h string, pid int) error {
		return &anon.ClaimError{Handler: h, PID: pid, Err: fmt.Errorf("%w: tried /tmp/x-%d", anon.ErrNoData, pid)}
	}
	notAsked := func(pid int) error {
		return &anon.ClaimError{Handler: "hang", PID: pid, Err: fmt.Errorf("/bin/hang: claim: %w", fmt.Errorf("%w: it timed out on pid 30", anon.ErrNotAsked))}
	}
	claims := []anonbind.Claim{
		{PID: 10, Comm: "node", Handler: "perfmap", Source: "perfmap /tmp/perf-10.map", Asked: 50, Named: 50,
			Ambiguous: []anonbind.Ambiguity{{Start: 0x1000, End: 0x1100, Names: []string{"a", "b"}}, {Start: 0x2000, End: 0x2100, Names: []string{"c", "d"}}, {Start: 0x3000, End: 0x3100, Names: []string{"e", "f"}}, {Start: 0x4000, End: 0x4100, Names: []string{"g", "h"}}}},
		{PID: 20, Comm: "toy", Handler: "broken", Source: "broken data", Asked: 1200, Named: 0, ResolveErr: errors.New("resolve: the map is gone")},
		{PID: 25, Comm: "evil", Errs: []error{&anon.ClaimError{Handler: "perfmap", PID: 25, Err: fmt.Errorf("refusing /tmp/perf-25.map: owned by uid 7: %w", trust.ErrUntrusted)}}},
		{PID: 30, Comm: "a", Errs: []error{&anon.ClaimError{Handler: "hang", PID: 30, Err: errors.New("no answer within 10s, killed it")}, noData("perfmap", 30)}},
		{PID: 31, Comm: "b", Errs: []error{notAsked(31), noData("perfmap", 31)}},
		{PID: 32, Comm: "c", Errs: []error{notAsked(32), noData("perfmap", 32)}},
	}
	for pid := 100; pid < 140; pid++ {
		claims = append(claims, anonbind.Claim{PID: uint32(pid), Comm: "sh", Errs: []error{noData("jitlog", pid), noData("jitdump", pid), noData("perfmap", pid)}})
	}
	return claims
}

// TestTellClaims: stderr says what went wrong once per handler and
// process, and sums up the processes that merely have no JIT data; -v
// gives every detail.
func TestTellClaims(t *testing.T) {
	var quiet, verbose strings.Builder
	TellClaims(&quiet, "report", claimsOfASystem(), false)
	TellClaims(&verbose, "report", claimsOfASystem(), true)
	want := `jitprof report: pid 10 (node): JIT code named by perfmap from perfmap /tmp/perf-10.map
jitprof report: pid 10: the perfmap data is ambiguous for 0x1000-0x1100: a, b all ran there and it has no times to tell them apart (a jitdump or jitlog can)
jitprof report: pid 10: the perfmap data is ambiguous for 0x2000-0x2100: c, d all ran there and it has no times to tell them apart (a jitdump or jitlog can)
jitprof report: pid 10: the perfmap data is ambiguous for 0x3000-0x3100: e, f all ran there and it has no times to tell them apart (a jitdump or jitlog can)
jitprof report: pid 10: and 1 more ambiguous ranges (-v lists them)
jitprof report: pid 20 (toy): anon handler broken took its JIT code but failed while naming it (named 0 of 1200 addresses; the rest stay in anon buckets): resolve: the map is gone
jitprof report: pid 25 (evil): no anon handler named its JIT code; its samples stay in anon buckets
  anon handler perfmap, pid 25: refusing /tmp/perf-25.map: owned by uid 7: untrusted file
jitprof report: pid 30 (a): no anon handler named its JIT code; its samples stay in anon buckets
  anon handler hang, pid 30: no answer within 10s, killed it
jitprof report: anon handler hang was not asked about pids 31, 32: it timed out on pid 30
jitprof report: 42 processes have samples in anonymous memory but no JIT data an anon handler reads (pids 31, 32, 100 and 39 more); they stay in anon buckets (-v lists them and where each handler looked)
`
	if quiet.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", quiet.String(), want)
	}
	v := verbose.String()
	for _, s := range []string{"0x4000-0x4100: g, h", "pid 31 (b): no anon handler", "anon handler hang, pid 31: /bin/hang: claim: not asked: it timed out on pid 30", "pid 139 (sh): no anon handler", "anon handler jitdump, pid 139: no JIT data found: tried /tmp/x-139"} {
		if !strings.Contains(v, s) {
			t.Errorf("-v does not say %q:\n%s", s, v)
		}
	}
	if n := strings.Count(v, "\n"); n < 4*40 {
		t.Errorf("-v: %d lines, want the details of every process", n)
	}
}
