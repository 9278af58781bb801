// Package anonbind binds the anonymous-sample handlers of internal/anon
// (seed 001) to the processes of a source of samples: it builds what a
// handler sees of each process (its mappings over time, who it was, the
// JIT data copied for it, where its files live now), lets the handlers
// claim processes lazily, on the first anonymous sample of each, and
// names JIT code with what the claiming handler says, as the
// internal/resolve Resolver asks: by address and time, or by address and
// sequence number (seed 000) for a sample that keeps the generation
// instead of the time.
//
// New takes the processes behind a small interface (Processes): a
// recording's are Recorded(tracker, bundle, span); a sample database's or a
// live collector's are theirs. Prepare asks external handlers about many
// addresses in batches, so a parallel resolver never waits on a pipe.
package anonbind
