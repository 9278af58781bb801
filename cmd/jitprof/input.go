package main

import (
	"github.com/jitprof/jitprof/internal/driver"
	"github.com/jitprof/jitprof/perfdata"
)

// openRecording opens the recording a command reads the records of
// itself (-i), as the driver opens one (driver.OpenRecording).
func openRecording(path string, force bool) (*perfdata.File, error) {
	r, err := driver.OpenRecording(path, force)
	if err != nil {
		return nil, err
	}
	return r.File(), nil
}
