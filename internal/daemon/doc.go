// Package daemon is jitprof's always-on profiler (seed 003, OProfile's
// oprofiled): it samples every CPU, or some processes, without end, and
// counts the samples into the sample database of internal/sampledb, so a
// profile of a week costs the space of a profile of a minute.
//
// The collector (Run) is a record.Sink: record.Stream opens the events,
// falls back to user space where perf_event_paranoid says, synthesizes
// the processes that run already, drains the rings round by round and
// follows processes and mappings in its Recorder's process.Tracker, as
// for jitprof record and top. The daemon counts each round's samples
// through internal/ingest, flushes the counts, and answers its clients
// between rounds.
//
// With Config.Push the daemon also pushes, every interval, the samples
// it took since the last push to an OpenTelemetry Collector (push.go):
// the same samples resolved into a profile with their stacks and times,
// encoded by internal/otlp and sent by internal/delivery from a spool in
// the session directory; sampling never waits for it.
//
// Control is OProfile's opcontrol over a Unix socket in the session
// directory (mode 0600): status, dump, stop, reset and save; a pid file
// beside it; the session directory's lock keeps a second daemon out;
// Start and Stop are the command's ends of it. The directory is one no
// other user can write (trust.OpenOwnDir), and what the daemon makes in
// it is made through its descriptor.
package daemon
