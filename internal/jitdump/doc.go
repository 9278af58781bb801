// Package jitdump reads and writes perf's jitdump format, the jit-PID.dump
// files that JITs (V8's --perf-prof, the JVM's perf agent, .NET, wasmtime,
// ...) write for `perf inject --jit`.
//
// The format is specified in Linux's
// tools/perf/Documentation/jitdump-specification.txt: a 40-byte file header
// whose magic "JiTD" (0x4A695444) also gives the byte order, then records,
// each a 16-byte header (id, total_size, timestamp) and a payload.
// Record ids 0-4 are CODE_LOAD, CODE_MOVE, CODE_DEBUG_INFO, CODE_CLOSE and
// CODE_UNWINDING_INFO; other ids are kept raw and skipped by total_size.
// In debug entries the file name "\xff" means "same as the previous entry",
// as perf's own JVMTI agent writes it.
//
// Timestamps are CLOCK_MONOTONIC nanoseconds unless the header has
// FlagArchTimestamp (then they are an architecture counter such as the TSC).
//
// The package is pure: it reads an io.Reader and writes an io.Writer.
package jitdump
