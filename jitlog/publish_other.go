//go:build !amd64 || race

package jitlog

import (
	"sync/atomic"
	"unsafe"
)

// stampTSC stores the TSC at rec+toff, then the commit word at rec+4, and
// returns the TSC. sync/atomic's store is sequentially consistent, more
// than the release that publishing needs.
func stampTSC(rec *byte, toff uintptr, commit uint32) uint64 {
	t := rdtsc()
	le.PutUint64(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(rec), toff)), 8), t)
	atomic.StoreUint32((*uint32)(unsafe.Add(unsafe.Pointer(rec), 4)), commit)
	return t
}

// storeHint stores the append offset hint.
func storeHint(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
