package sampledb

import (
	"errors"
	"fmt"
	"runtime/debug"
	"unsafe"
)

// ErrFault says a mapped sample file could not be read or written: the
// file was truncated under the mapping, or its filesystem could not back
// a page (a full disk on a copy-on-write filesystem). The kernel's SIGBUS
// becomes this error, not a crash.
var ErrFault = errors.New("sample file memory fault")

// faultGuard turns a memory fault inside *mem (the mapping when the
// fault happens: a growing file is mapped again) into an error. Use as
//
//	defer faultGuard(&mem, &err)()
//
// Faults elsewhere, and other panics, go on.
func faultGuard(memp *[]byte, err *error) func() {
	old := debug.SetPanicOnFault(true)
	return func() {
		debug.SetPanicOnFault(old)
		r := recover()
		if r == nil {
			return
		}
		if f, ok := r.(interface{ Addr() uintptr }); ok && len(*memp) > 0 {
			mem := *memp
			base := uintptr(unsafe.Pointer(&mem[0]))
			if a := f.Addr(); a >= base && a < base+uintptr(len(mem)) {
				*err = fmt.Errorf("%w at offset %d", ErrFault, a-base)
				return
			}
		}
		panic(r)
	}
}
