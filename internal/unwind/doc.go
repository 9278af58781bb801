// Package unwind walks user stacks copied with samples (perf's
// --call-graph dwarf: the user registers and the top of the stack) to
// the chain of their callers, with the call frame information of the
// code: .eh_frame (and .eh_frame_hdr's pointer to it in files without
// section headers), .debug_frame of the image, its separate debug file
// (found by build-id or debuglink as internal/symbolize finds it) or its
// MiniDebugInfo, the vDSO's, and the unwinding information JITs log for
// their code.
//
// Each image's call frame information is compiled once into a Table of
// rows sorted by address (cfi.go reads the CIEs and FDEs, program.go runs
// their CFA programs), so that a step is a binary search and one row's
// rules; tables are kept per image for the whole report and in jitprof's
// cache directory by build-id (cache.go). Unwind is a pure function of
// the sample's registers and stack bytes and of an AddressSpace that
// says what code is at an address at the sample's time; an Unwinder
// (process.go) is that address space for the processes of a
// process.Tracker, with the caches that live across samples, and its
// Walker.Callchain (chain.go) joins a sample's kernel chain and its
// unwound user chain, for a report (internal/perfdatasrc) and the sample
// database's ingest (internal/ingest) alike.
//
// The bytes are other users' (images, JIT dumps): reading them is
// bounded (entry lengths checked, 16 million rows at most, expressions
// of 1 KiB), and so is unwinding them (127 frames, 256 operations and a
// stack of 64 per DWARF expression, a stack pointer that must move up at
// every step, reads only inside the stack copy). A frame without call
// frame information is stepped through by its frame pointer where that
// is plausible, as libunwind (which perf unwinds with) guesses, and
// otherwise ends the chain, saying why (Stop). Nothing here prints the
// stack's bytes.
//
// Formats: DWARF 5 section 6.4 (call frame information) and 2.5 (DWARF
// expressions); the Linux Standard Base's "Exception Frames" (.eh_frame,
// .eh_frame_hdr, pointer encodings); the System V x86-64 psABI's DWARF
// register numbers; perf's x86-64 register order
// (arch/x86/include/uapi/asm/perf_regs.h).
package unwind
