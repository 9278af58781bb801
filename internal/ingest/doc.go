// Package ingest counts samples into the sample database of
// internal/sampledb, as OProfile's daemon did (seed 003, with seed 000's
// sequence numbers): one converter, fed round by round by the live
// daemon (internal/daemon, a record.Sink) and by Import, which puts a
// recording (perf's or jitprof's) into a session.
//
// Ingest places each sample: the mapping it hit in a process.Tracker,
// that mapping's image, the offset, and in JIT code the sequence number
// of the code live at the address when the sample was taken, from the
// JIT data it follows live (a jitlog database tailed, a jitdump's
// code_index, numbered snapshots of a perf map, PyPy's loops numbered as
// the log its PYPYLOG names grows; jit.go), each read from where it was
// last read, into a code table per process (code.go:
// B-trees, O(log n) a load or a lookup). It copies each process's JIT
// data into the session (jit/PID/, with a manifest; jitcopy.go) as it
// reads it, so reports work after /tmp is cleaned, and lets go of a
// process when it exits (sampledb.DB.ForgetProcess). A process's JIT
// data is its user's to write: what is copied of it, kept of it in
// memory and done with it in one round is bounded (bounds.go).
//
// With CallGraph the arcs of each sample's callchain go into {cg} files;
// a sample that carries user registers and a copy of its user stack
// (--call-graph dwarf) has its chain unwound first, with a report's
// unwinder and JIT code's unwinding records (dwarf.go), and only the
// counts are kept.
package ingest
