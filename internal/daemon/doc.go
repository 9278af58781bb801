// Package daemon is jitprof's always-on profiler (seed 003, OProfile's
// oprofiled, with seed 000's sequence numbers): it samples every CPU, or
// some processes, without end, and counts the samples into the sample
// database of internal/sampledb, so a profile of a week costs the space
// of a profile of a minute.
//
// The collector (Run) is a record.Sink: record.Stream opens the events,
// falls back to user space where perf_event_paranoid says, synthesizes
// the processes that run already, drains the rings round by round and
// follows processes and mappings in its Recorder's process.Tracker, as
// for jitprof record and top; the daemon counts each round's samples
// through Ingest and answers its clients between rounds: the mapping a sample hit, that
// mapping's image, the offset, and in JIT code the sequence number of
// the code live at the address when the sample was taken, from the JIT
// data it follows live (a jitlog database tailed, a jitdump's
// code_index, numbered snapshots of a perf map), each read from where it
// was last read. It copies each process's JIT data into the session
// (jit/PID/, with a manifest) as it reads it, so reports work after /tmp
// is cleaned, and lets go of a process when it exits
// (sampledb.DB.ForgetProcess). A process's JIT data is its user's to
// write: what the daemon copies of it, keeps of it in memory and does
// with it between two drains of the rings is bounded (bounds.go).
//
// Control is OProfile's opcontrol over a Unix socket in the session
// directory (mode 0600): status, dump, stop, reset and save; a pid file
// beside it; the session directory's lock keeps a second daemon out. The
// directory is one no other user can write (trust.OpenOwnDir), and what
// the daemon makes in it is made through its descriptor.
package daemon
