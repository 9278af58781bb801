// Package jitlog is jitprof's JIT data logger (seed 000, "Proposal 3"): a JIT
// calls it every time it generates, moves or frees code, and it keeps a
// per-process database, anon.<tgid>, that the profiler reads while the JIT
// runs to name samples that land in generated code.
//
// Every (re)generation of code gets a new sequence number, unique within the
// process even when code is re-generated at a reused address under the same
// name, so a sample can be charged to the generation that was running.
//
// The format is specified in docs/jitlog-format.md; in short the database is
// a little-endian, 8-byte aligned, append-only file: a 128-byte header that
// holds the shared append offset and sequence counter, then framed records
// that are reserved with an atomic fetch-add and published by storing their
// commit word last. The same format is written by the C agent in agent/, so
// C JITs need no Go runtime.
//
// The package has three parts:
//   - the writer, [Open] and [Logger], which Go JITs import; it can also write
//     perf's jitdump (tools/perf/Documentation/jitdump-specification.txt) from
//     the same calls;
//   - the readers, [NewReader], [Read] and [Tail], which decode snapshots and
//     live files;
//   - housekeeping, [Cleanup], which removes databases of processes that are
//     gone.
package jitlog
