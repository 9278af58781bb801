// Package pathtime is exact, instrumented profiling of compiled regions
// from enter and exit events, the model of seed 002 ("A JIT-aware
// profiler"): a JIT logs when a thread enters a loop, bridge or function it
// compiled and when it leaves, and pathtime turns those events into time
// per region.
//
// The rules, per thread:
//   - Entering a region while in another is an implicit exit from the
//     other: PyPy's JUMP from an entry bridge to its loop, or from one loop
//     to the next, logs only the enter. (Seed 002: 200-100 ticks in the
//     entry bridge, 500-200 in the loop.)
//   - With Nested, an enter inside a region is a call instead (PyPy's
//     call_assembler): the callee's time is charged to the caller, as the
//     seed asks, and its exit returns to the caller rather than to the
//     interpreter.
//   - Regions can be merged into another (Merge), which is the seed's first
//     policy for inner bridges: their time counts for the loop they jump
//     back to.
//   - A thread still inside a region at the end is charged up to End.
//
// The time is wall time between enter and exit: it includes time the
// thread was preempted or blocked. Samples of the same threads in the same
// clock (a recording's cpu-clock samples) give on-CPU time: each is charged
// to the region its thread was in when it was taken. An Accountant takes
// the events one at a time, so a log bigger than memory can be streamed.
//
// The package is pure: it takes events and returns totals. jitprof's
// jitlog records (EnterRecord, ExitRecord) and PyPy's PYPYLOG
// jit-profile-enter/exit sections both map onto Event.
package pathtime
