package main

import (
	"fmt"
	"os"

	"github.com/jitprof/jitprof/internal/trust"
)

// openLog opens a log named on the command line (--pypylog) under the
// rule for recordings (trust.OpenRecording): one owned by neither the
// user running jitprof nor root is refused unless force, and a device
// or a directory is refused; a FIFO is read as a stream.
func openLog(path string, force bool) (*os.File, error) {
	if path == "-" {
		return nil, fmt.Errorf("--pypylog: give a file, not standard input")
	}
	return trust.OpenRecording(path, force)
}
