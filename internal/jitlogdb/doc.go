// Package jitlogdb is what jitprof's commands do with the databases of
// the JIT data logger (package jitlog) on this machine: which file is a
// process's database and whose it must be (Locate), a scan that reads up
// to a torn last record with a warning (Scan), the records as text
// (Dump), and the removal of the databases of processes that are gone
// (Clean). jitprof jitlog and jitprof pathtime use it; the format itself
// is package jitlog's.
package jitlogdb
