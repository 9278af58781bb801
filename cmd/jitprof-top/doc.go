// Command jitprof-top is jitprof top: a live view of what runs, as perf
// top's, JIT code named as it runs (internal/top). `jitprof top ARGS`
// runs it, and it may be run as jitprof-top ARGS too.
//
// It is an executable of its own so that its terminal UI library
// (github.com/gdamore/tcell, with its terminal database and character
// sets) is linked into it alone: linked into jitprof, its package
// initializers cost every command 1-2 ms of start-up (bench/RESULTS.md).
package main
