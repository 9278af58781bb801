// Package pypylog reads PyPy's debug log, the file PYPYLOG names (seed
// 002): the machine code of the JIT's loops and bridges, their optimised
// traces with source positions, and the enter/exit events seed 002
// proposes.
//
// # Format
//
// RPython's rpython/translator/c/src/debug_print.c writes the log. A
// section opens with "[HEX] {name" and closes with "[HEX] name}" (format
// "%s[%llx] %s%s%s\n": colours, timestamp, "{" or "", name, "" or "}");
// sections nest, and the lines between are what the code inside printed.
// PYPYLOG=prefix1,prefix2:FILE keeps the sections whose names start with
// a prefix (nested ones included wherever they are), :FILE keeps all,
// FILE alone keeps only the section lines; "%d" in FILE is the pid. The
// file is flushed at every section end, so a killed program leaves a log
// whole up to its last section, or cut inside one where stdio's buffer
// filled: a Reader reads such a log to where it stops and says what was
// cut in its warnings, not as an error. Newer PyPys put a thread number,
// "N# ", before section lines; 7.3.11 (Debian 12's) does not.
//
// HEX is READ_TIMESTAMP: on x86-64 the time-stamp counter (rdtsc,
// rpython/translator/c/src/asm_gcc_x86_64.h), elsewhere
// CLOCK_THREAD_CPUTIME_ID nanoseconds, which no other clock can be joined
// with.
//
// The package has two layers, as Go's internal/trace: Reader turns lines
// into events (section start, end, text) in bounded memory, at the speed
// of a line scan; Read keeps what the JIT sections say:
//   - jit-backend-addr (rpython/jit/backend/x86/assembler.py): where the
//     machine code of a loop or bridge is (Code);
//   - jit-log-opt-loop, jit-log-opt-bridge (rpython/jit/metainterp/
//     logger.py): the optimised trace, each operation with its byte
//     offset in the code block and the debug_merge_point before it, whose
//     location is PyPy3's "co_name;file:firstline-line~#index OPNAME"
//     (pypy/module/pypyjit/interp_jit.py) (Trace);
//   - jit-profile-enter, jit-profile-exit: seed 002's events, whose body
//     names the loop or bridge (ProfileEvent). Released PyPys do not write
//     them. The seed's example is in hexadecimal like every timestamp:
//     "200-100=100 ticks" are 0x100 ticks.
//
// A Follower reads a log its program is still writing, as the daemon
// follows it: whole lines fed as they come, each loop and bridge named
// when its jit-backend-addr section ends, as Log.Names names it in the
// whole log (a bridge's loop is known by then: the trace whose guard it
// leaves is logged before it), keeping of the traces only the guards.
//
// Sections are parsed by name: the "has address" line of jit-backend-addr
// also appears inside jit-regalloc-stats, which is skipped.
//
// # Timestamps and CLOCK_MONOTONIC
//
// Samples are stamped with CLOCK_MONOTONIC, the log with the TSC. A Clock
// relates the two from pairs of readings of both taken at the same
// instant, and the pairs come from jitprof record, which reads the TSC
// and CLOCK_MONOTONIC together when it starts and when it stops, on the
// same machine as the PyPy it records (the TSC is one counter for every
// process of a machine or VM: invariant and synchronised across CPUs on
// every x86-64 of the last decade). Between two pairs seconds apart the
// relation is linear to a few nanoseconds (measured on this project's
// VMs, whose kernel keeps time with kvm-clock, itself the TSC scaled), so
// a loop's appearance is placed on the samples' clock to well under a
// microsecond, far less than the time PyPy takes to trace and compile the
// next loop that could reuse its memory: a reused range is charged by
// time to the right loop.
//
// The log alone cannot give that relation. Its timestamps say nothing of
// the wall clock, and the file's times are too coarse and too loosely
// tied to a line: PyPy opens the file at its first debug_start of any
// category, logged or not, so the creation time pairs with no timestamp;
// the modification time pairs only with the last flush, at a kernel tick's
// resolution (milliseconds) unless the file system keeps fine-grained
// times, and a rate from one pair needs the TSC frequency, which the
// recording does not carry. Errors of milliseconds would charge samples
// near a reuse to the wrong loop. A recording without pairs (one Linux
// perf made, or one from a machine without a TSC) is therefore resolved
// without times, as a perf map is: where two loops used one range the
// report lists both names rather than guessing.
//
// The package is pure: no I/O but the io.Reader it is given, no syscalls.
package pypylog
