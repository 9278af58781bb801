// Package driver is the one path from a source of samples to an output,
// shared by the command line and the web UI, as pprof's internal/driver
// is: open the input (a Source: a perf.data recording, or a sample
// database session), bind the anonymous-sample handlers the options ask
// for to the source's processes (internal/anonbind), load the profile
// (internal/profile, through the source's resolver), apply perf's
// filters and leave JIT samples out unless asked (Load), and write the
// chosen output with the sort keys --separate and --merge give (Report,
// Annotate). It tells the user, on the writer it is given, which handler
// named each process's JIT code and what the source warned of.
//
// cmd/jitprof parses flags into Options and calls the driver; the web UI
// wraps what Load returns (a profile, its name, notes for its header and
// the handlers' claims, and Close) in its own recording.
package driver
