package anonbind

import "github.com/jitprof/jitprof/internal/anon"

// A reader that resolves samples while it is still reading the
// processes' timeline (internal/perfdatasrc's one pass of a DWARF
// recording) binds handlers before the timeline is whole: a process is
// claimed at its first JIT address, by what Processes says of it then.
// The claim is the one the whole timeline gives as long as what the
// handlers read of the process (anon.TimelineKey: its command name, the
// mappings they look at) stays the same; Settled says whether it has.

// stamper is Processes that says when what it tells of a process may
// have changed (process.Tracker.Stamp): Settled reads again only those.
type stamper interface {
	Stamp(pid uint32) uint64
}

// Early reports whether the Binder can say, with Settled, whether its
// claims still hold: anon.TimelineKey knows what each of its handlers
// reads (not an external handler's).
func (b *Binder) Early() bool {
	return anon.ReadsTimelineKnown(b.opts.Handlers)
}

// Settled reports whether every process claimed so far was claimed by
// what its handlers read of its timeline as Processes tells it now:
// false when a record told since (a rename, a jitdump marker, JIT memory
// of a PyPy process) changed what they read, and so perhaps the claim.
// Meaningful only when Early.
func (b *Binder) Settled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	sp, stamps := b.procs.(stamper)
	for pid, st := range b.state {
		st.once.Do(func() { b.claim(pid, st) })
		if stamps {
			now := sp.Stamp(pid)
			if now == st.stamp {
				continue
			}
			st.stamp = now
		}
		p := b.procs.Process(pid)
		if key, ok := anon.TimelineKey(b.opts.Handlers, &p); !ok || key != st.key {
			return false
		}
	}
	return true
}

// Stamp implements stamper.
func (r recorded) Stamp(pid uint32) uint64 { return r.t.Stamp(pid) }
