package anonbind

import (
	"time"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/resolve"
)

// Live names the JIT code of running processes (jitprof top, the
// daemon's OTLP push) with a Binder made anew on each Renew, with fresh
// handlers: a handler reads a process's JIT data when it claims it, and
// the data grows while the processes run (a perf map appended to, a
// jitdump and a jitlog written on). jitdump and jitlog name code by
// time, so the generations a JIT put at one address stay apart. Until
// the first Renew it names nothing.
//
// A process claimed by the last Binder whose data files are as they
// were then (the same files, unwritten, and none where there was none:
// anon.Reads) keeps its claim in the next: a long-running JIT that
// makes no new code (a server past its warm-up) is not read again every
// renewal, which for a perf map of hundreds of megabytes was most of a
// renewal's cost. A perf map appended to since is read from where the
// claim stopped (anon.Extend), when what was appended changes nothing
// already named. Only with built-in handlers, whose reads anon.Reads
// sees; only the claims the last Binder made or kept, so that what is
// kept is of the processes looked up in the last interval.
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

// Renew closes the last Binder and makes one of procs with opts, which
// keeps the last one's claims whose data is unchanged when the handlers
// are the same built-in ones.
func (l *Live) Renew(procs Processes, opts Options) {
	old := l.b
	l.b = New(procs, opts)
	l.last = time.Now()
	if old == nil {
		return
	}
	if keepable(old.opts, opts) {
		old.mu.Lock()
		prev := map[uint32]*procState{}
		for pid, st := range old.state {
			if st.claimed.Load() && st.reads != nil {
				prev[pid] = st
				delete(old.state, pid)
			}
		}
		// And those the last Binder was handed and did not look up,
		// for keepUnused: the push renews whenever a process with JIT
		// samples exits, and the others' claims should last until
		// they are next looked up.
		for pid, st := range old.prev {
			if _, ok := prev[pid]; !ok && !st.taken.Load() && l.last.Sub(st.claimedAt) < keepUnused {
				prev[pid] = st
				delete(old.prev, pid)
			}
		}
		old.mu.Unlock()
		l.b.prev = prev
	}
	old.Close()
}

// keepUnused is how long a claim is kept through renewals in which its
// process is not looked up: a few of the push's intervals, and what a
// claim of a process gone since holds in memory no longer than that.
const keepUnused = 30 * time.Second

// keepable reports whether a Binder of opts may keep the claims of one
// of last: the same built-in handlers (anon.Reads sees what they read),
// in the same order, the same trust and the same /proc.
func keepable(last, opts Options) bool {
	if !anon.ReadsTimelineKnown(opts.Handlers) || last.Force != opts.Force || last.Proc != opts.Proc ||
		len(last.Handlers) != len(opts.Handlers) {
		return false
	}
	for i, h := range opts.Handlers {
		if h.Name() != last.Handlers[i].Name() {
			return false
		}
	}
	return true
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
