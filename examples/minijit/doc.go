// Command minijit is a small real JIT: it compiles programs of a tiny
// register bytecode to x86-64 machine code, places them in fixed-size slots
// of one executable region and calls them from Go. It is jitprof's demo and
// test subject (issue 6).
//
// It re-generates code at reused addresses — a slot re-compiled under another
// name, or under the same name as a new generation — and logs every load and
// unload through jitlog (and, with -jitdump, perf's jitdump), so a profile of
// it is only right if samples are charged to the generation that ran.
//
// The CPU time of the JIT work is split between generations by a known
// schedule: each call is charged the thread CPU time it took, and the next
// call goes to the generation furthest behind its target share, so the
// measured split matches the schedule to within one call. -truth writes the
// measured split as JSON for tests to compare a profile against.
//
// Usage:
//
//	minijit [-duration 2s] [-truth FILE] [-jitdump] [-jitlog-dir DIR] [-quiet]
//
// -duration is CPU time of JIT work, not wall time, so the split holds on a
// loaded machine. minijit runs on linux/amd64 only.
package main
