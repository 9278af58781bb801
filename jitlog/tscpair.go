package jitlog

import "runtime"

// TSCPair reads the time-stamp counter and CLOCK_MONOTONIC at the same
// instant (the tightest of three readings, as the logger's clock records
// are taken), for a profiler that must place another program's TSC
// stamps on the monotonic clock: jitprof record reads one when it starts
// and one when it stops, and PyPy's log is stamped with the TSC. ok is
// false where there is no TSC to read (anything but amd64).
func TSCPair() (tsc, ns uint64, ok bool) {
	if runtime.GOARCH != "amd64" {
		return 0, 0, false
	}
	tsc, ns = clockPair()
	return tsc, ns, true
}
