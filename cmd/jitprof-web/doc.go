// Command jitprof-web serves jitprof's interactive view of a recording or
// of the daemon's sessions (internal/web: pprof's web UI and jitprof's
// own pages). `jitprof web ARGS` runs it, and it may be run as
// jitprof-web ARGS too.
//
// It is an executable of its own so that pprof's web UI and what it
// brings (net/http, TLS, html/template, the cgo resolver) are linked into
// it alone: linked into jitprof, their package initializers and page
// faults cost every command about 6 ms of start-up, a fifth of a small
// report (bench/RESULTS.md).
package main
