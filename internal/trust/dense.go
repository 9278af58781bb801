package trust

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// CheckDense refuses a file with a hole in [from, to): a sparse file
// costs its writer nothing on disk and reads as zeros, so a copy of it
// (jitprof record's, the daemon's) would turn a few kilobytes of a
// user's disk into gigabytes of root's. JITs write their files with
// write or through a mapping they populate, which leave no holes. shown
// names the file in the refusal. It moves f's file offset.
func CheckDense(f *os.File, shown string, from, to int64) error {
	if from >= to {
		return nil
	}
	hole, err := unix.Seek(int(f.Fd()), from, unix.SEEK_HOLE)
	switch {
	case errors.Is(err, unix.ENXIO):
		return nil // from is past the end: the file shrank
	case errors.Is(err, unix.EINVAL):
		return nil // no SEEK_HOLE here: holes cannot be told
	case err != nil:
		return fmt.Errorf("%s: %w", shown, err)
	}
	if hole < to {
		return refuse(shown, fmt.Sprintf("sparse: a hole at offset %d, before the %d bytes to read", hole, to), false)
	}
	return nil
}
