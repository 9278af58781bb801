// Package sessionsrc is the sample database as a source of profiles,
// as internal/perfdatasrc is a perf.data recording:
// the sample files a profile specification selects (internal/sampledb)
// resolved into an internal/profile through the internal/resolve
// Resolver, as a recording's samples are. Each file's counts are
// samples at offsets in its image: files and the kernel are symbolized
// as mapped, and JIT code is named by the anon handlers from the JIT
// data the daemon copied into the session, by sequence number (seed
// 000), not by time.
package sessionsrc
