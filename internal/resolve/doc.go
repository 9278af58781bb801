// Package resolve turns samples into a profile: a sample's process,
// thread, time, CPU, mode, address and callchain become interned frames,
// stacks and threads of an internal/profile Builder. Addresses in files
// are symbolized with internal/symbolize, kernel addresses with
// kallsyms, and addresses in anonymous executable memory (JIT code) are
// named by an AnonResolver (internal/anonbind), by the sample's time or,
// for a sample that carries one, by the sequence number of the code's
// generation (seed 000).
//
// The Resolver knows nothing of where samples come from: processes and
// their mappings are behind the Processes interface (a
// *process.Tracker), and sources feed it Samples: a recording's
// (internal/perfdatasrc), the sample database's (internal/sessionsrc),
// the live view's and the daemon's push.
// It caches each resolved stack by the process's epoch (the span of time
// in which its mappings stay the same), so a recording costs one
// symbolization per distinct stack and epoch, not per sample.
package resolve
