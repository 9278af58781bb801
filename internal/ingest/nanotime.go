package ingest

import "golang.org/x/sys/unix"

// nanotime reads CLOCK_MONOTONIC, the clock of the samples' times and of
// every JIT source's.
func nanotime() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
