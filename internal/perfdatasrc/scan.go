package perfdatasrc

import "github.com/jitprof/jitprof/perfdata"

// ScanAnon calls fn with each address in anonymous executable memory
// that Load, with leafOnly as Options.LeafOnly, will ask JIT names for,
// at its time: each sample's user-mode address and, unless leafOnly, the
// user-mode addresses of its callchain. It reads f's samples once,
// copying them (a Sequential Reader: through the mapping, the page
// faults cost 4 to 5 times the CPU), for a caller that asks a JIT
// handler about them ahead, in batches (anonbind.Binder.Prepare). A
// file that cannot be read fails in Load, with its error; what was read
// here is reported, and the rest is resolved on demand. A stream, which
// can be read only once, is not scanned, nor a file whose processes
// mapped no anonymous executable memory.
func ScanAnon(f *perfdata.File, tl *Timeline, leafOnly bool, fn func(pid uint32, addr, time uint64)) {
	if f.Pipe || !tl.anonCode {
		return // no address is in anonymous memory
	}
	add := func(pid uint32, addr, time uint64) {
		if m := tl.Tracker.Lookup(pid, addr, time, false); m != nil && m.Anon {
			fn(pid, addr, time)
		}
	}
	r := f.Records()
	r.SkipCallchains = leafOnly
	r.Sequential = true // fn is given numbers, not the record's slices
	for r.Next() {
		s, ok := r.Record().(*perfdata.Sample)
		if !ok {
			continue
		}
		time := s.Timestamp()
		mode := s.CPUMode()
		if mode == perfdata.MiscUser {
			add(s.PID, s.IP, time)
		}
		for _, ip := range s.Callchain {
			switch {
			case ip == perfdata.CallchainUser:
				mode = perfdata.MiscUser
			case ip >= perfdata.CallchainContextMax:
				mode = perfdata.MiscKernel
			case mode == perfdata.MiscUser:
				add(s.PID, ip, time)
			}
		}
	}
}
