package anonbind

import (
	"time"

	"github.com/jitprof/jitprof/internal/resolve"
)

// Live names the JIT code of running processes (jitprof top, the
// daemon's OTLP push) with a Binder made anew on each Renew, with fresh
// handlers: a handler reads a process's JIT data when it claims it, and
// the data grows while the processes run (a perf map appended to, a
// jitdump and a jitlog written on). jitdump and jitlog name code by
// time, so the generations a JIT put at one address stay apart. Until
// the first Renew it names nothing.
type Live struct {
	b    *Binder
	last time.Time
}

// Resolve implements resolve.AnonResolver with the last Binder made.
func (l *Live) Resolve(pid uint32, addr, time uint64) (resolve.AnonFrame, bool) {
	if l.b == nil {
		return resolve.AnonFrame{}, false
	}
	return l.b.Resolve(pid, addr, time)
}

// Renew closes the last Binder and makes one of procs with opts.
func (l *Live) Renew(procs Processes, opts Options) {
	l.Close()
	l.b = New(procs, opts)
	l.last = time.Now()
}

// Age is how long ago the last Renew was, and false before the first.
func (l *Live) Age() (time.Duration, bool) {
	if l.b == nil {
		return 0, false
	}
	return time.Since(l.last), true
}

// Close lets the Binder's handlers go.
func (l *Live) Close() {
	if l.b != nil {
		l.b.Close()
		l.b = nil
	}
}

// Claims is the last Binder's Claims: which handler named which
// process's code, or why none did.
func (l *Live) Claims() []Claim {
	if l.b == nil {
		return nil
	}
	return l.b.Claims()
}
