//go:build amd64 && !race

package jitlog

// The enter and exit paths publish with plain MOVs in assembly: x86-64
// (TSO) never makes a store visible before earlier stores, so a MOV is a
// release store, and a call into assembly keeps the compiler from moving
// earlier stores past it. sync/atomic's Store is an XCHG, a full barrier
// that costs about 8 ns more, and nothing here needs more than release.
// Race builds use sync/atomic (publish_other.go), which the race detector
// understands.

// stampTSC stores the TSC at rec+toff, then the commit word at rec+4, and
// returns the TSC. It also prefetches the file ahead of rec.
//
//go:noescape
func stampTSC(rec *byte, toff uintptr, commit uint32) uint64

// storeHint stores the append offset hint. It needs atomicity (an aligned
// MOV has it) but no ordering: every claim is checked by the
// compare-and-swap on the size word the hint points at.
func storeHint(p *uint64, v uint64) { *p = v }
