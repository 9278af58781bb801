//go:build !(linux && amd64)

package main

import (
	"fmt"
	"io"
	"runtime"
)

// jit needs an x86-64 CPU to run its code and Linux to map it.
func jit(options, io.Writer) (*Truth, error) {
	return nil, fmt.Errorf("minijit: generates x86-64 code for Linux and cannot run on %s/%s", runtime.GOOS, runtime.GOARCH)
}
