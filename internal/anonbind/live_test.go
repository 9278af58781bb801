package anonbind

import (
	"testing"

	"github.com/jitprof/jitprof/internal/anon"
)

// TestLive: a Live names nothing before its first Renew, then with the
// handlers of the last Renew only, each Renew claiming the processes
// anew (a handler reads JIT data when it claims).
func TestLive(t *testing.T) {
	var l Live
	if _, ok := l.Resolve(1, 0x1000, 1); ok {
		t.Error("named code before the first Renew")
	}
	if _, ok := l.Age(); ok || l.Claims() != nil {
		t.Error("an age or claims before the first Renew")
	}
	procs := liveProcesses{start: 0x1000, end: 0x2000}
	first, second := &fake{name: "first"}, &fake{name: "second"}
	l.Renew(procs, Options{Handlers: []anon.Handler{first}})
	if af, ok := l.Resolve(1, 0x1000, 1); !ok || af.Func != "first [gen 3]" {
		t.Errorf("after a Renew: %+v, %v", af, ok)
	}
	if age, ok := l.Age(); !ok || age < 0 {
		t.Errorf("age %v, %v after a Renew", age, ok)
	}
	if c := l.Claims(); len(c) != 1 || c[0].Handler != "fake" {
		t.Errorf("claims %+v, want the fake handler's of pid 1", c)
	}
	l.Renew(procs, Options{Handlers: []anon.Handler{second}})
	if af, ok := l.Resolve(1, 0x1000, 1); !ok || af.Func != "second [gen 3]" {
		t.Errorf("after the second Renew: %+v, %v", af, ok)
	}
	if first.claims.Load() != 1 || second.claims.Load() != 1 {
		t.Errorf("claims: %d by the first handlers, %d by the second; want one each", first.claims.Load(), second.claims.Load())
	}
	l.Close()
	if _, ok := l.Resolve(1, 0x1000, 1); ok {
		t.Error("named code after Close")
	}
}
