package main

import (
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/perfdata"
)

// openRecording opens the recording a command was given (-i), refusing,
// as perf does, one owned by neither the user running jitprof nor root
// unless force (trust.OpenRecording).
func openRecording(path string, force bool) (*perfdata.File, error) {
	fd, err := trust.OpenRecording(path, force)
	if err != nil {
		return nil, err
	}
	if path == "-" {
		return perfdata.Open(path)
	}
	return perfdata.OpenFile(fd, path)
}
