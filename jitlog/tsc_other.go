//go:build !amd64

package jitlog

// rdtsc is never called where tscUsable is false.
func rdtsc() uint64 { return 0 }

// tscUsable is false: only amd64 stamps regions with the TSC.
func tscUsable() bool { return false }
