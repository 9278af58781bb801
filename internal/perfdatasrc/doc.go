// Package perfdatasrc is the perf.data source of samples: it replays a
// recording (a file, or a pipe-mode stream) into a profile, as
// internal/sessionsrc loads the sample database's. Its process,
// mapping and rename records go into a process.Tracker; its samples, at
// their times, into an internal/resolve Resolver, which symbolizes them
// and names JIT code. Nothing else in the pipeline knows perf.data.
//
// A file is read twice. The first pass collects the few process and
// mapping records into a Timeline; the second resolves each sample
// against it at the sample's time, in parallel parts merged in file
// order. Reading the whole timeline first gives the answer perf's
// ordered-events queue gives (records sorted by time within
// FINISHED_ROUNDs) without buffering samples: a mapping made after a
// sample never names it, however the per-CPU buffers interleaved in the
// file.
//
// A recording with user stacks to unwind (--call-graph dwarf), which is
// mostly the stacks' bytes, is read once instead where it can be
// (onepass.go): each sample unwound as it comes and resolved a window of
// samples later, those a late record of another CPU's buffer reaches
// unwound again, to the same profile. Its JIT handlers are bound early
// and claim processes as the timeline grows; a record that changes what
// a claim read (Options.BindEarly), JIT code of handlers that cannot be
// bound so, or a record reaching a sample already resolved, sends it the
// two-pass way.
//
// Flat profiles (Options.LeafOnly) are read in one pass instead: parts
// of the file, found by perfdata.Resync, are read in parallel, summing
// the samples of each place (process, thread, CPU, address, event) with
// the span of their times and keeping the offsets of the process and
// mapping records; the timeline is built from those, and each place
// resolved once, or sample by sample (read again) when its samples
// straddle a change of its process or thread. Parts that do not join up
// (Resync guessed wrong) or an error send Load the two-pass way.
//
// A stream, which can be read once, is summed by place the same way in
// its one pass (stream.go).
package perfdatasrc
