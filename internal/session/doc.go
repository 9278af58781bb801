// Package session replays a perf.data recording: which processes existed
// (COMM, FORK, EXIT, exec) and what each had mapped (MMAP, MMAP2) over
// time, the kernel's own mappings included, so that every sample resolves
// against what was mapped in its process at its timestamp.
//
// Replay reads the file twice. The first pass collects the few
// process and mapping records into a timeline; the second resolves each
// sample against the timeline at the sample's time. Reading the whole
// timeline first gives the answer perf's ordered-events queue gives
// (records sorted by time within FINISHED_ROUNDs) without buffering
// samples: a mapping made after a sample never names it, however the
// per-CPU buffers interleaved in the file.
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
// Load turns a recording into a profile.Profile, symbolizing with
// internal/symbolize. Anonymous executable memory (JIT code) becomes one
// image per mapping and process unless an AnonResolver names it.
package session
