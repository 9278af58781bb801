// Package codemap is the time-aware index of JIT code that every JIT side
// data source feeds: perf's jitdump, /tmp/perf-PID.map files, and our own
// jitlog. It answers "what code was at this address at this time", so that
// code re-generated at a reused address is never charged to the function
// that was there before.
//
// Sources report loads, moves and unloads of code ranges with their times
// (CLOCK_MONOTONIC nanoseconds, as perf samples carry them). A Builder
// collects them in any order; Build sorts them by time, keeping the order
// of calls for equal times, and computes when each piece of code stopped
// being there: at its unload, at its move, or at the first later load,
// move or unload that touched any part of its range. The resulting Map
// answers point queries in O(log n).
//
// Timeless sources (perf maps) load every entry at time 0 in file order:
// Lookup then names the last writer, and Ambiguous lists every distinct
// name that ever claimed the address, which is the honest answer for a
// format without times.
//
// # Clock skew
//
// A JIT stamps a load after it wrote the code, and its clock reading and
// the sampler's are not taken at the same instant, so a sample can carry a
// time slightly before the load record of the code it hit. Map.Skew (by
// default DefaultSkew) is the tolerance: a lookup at time t that finds
// nothing live at the address is answered by code loaded there within Skew
// after t. Code that is live at t always wins, because an earlier
// generation really was there until the load record says otherwise; the
// tolerance only fills gaps, it never re-assigns a sample.
//
// The package is pure: no I/O, no syscalls.
package codemap
