// Package symbolize turns addresses in executable images into function
// names, source lines and inlined-call chains.
//
// An [Image] is one ELF file as the profiled process mapped it. Its symbols
// come from the ELF symbol tables (.symtab, merged with .dynsym), from PLT
// stubs named through .rela.plt, from MiniDebugInfo (.gnu_debugdata, an
// xz-compressed ELF holding the local function symbols a stripped binary
// lost) and from separate debug files. Sample addresses are translated with
// the program headers: a mapping's (start, pgoff) give a file offset, and the
// PT_LOAD segment holding that offset gives the ELF virtual address, the same
// way for PIE, shared objects and fixed-address executables.
//
// Source lines and inlined frames come from DWARF (.debug_line and
// DW_TAG_inlined_subroutine), indexed once per image on first use.
//
// A [Symbolizer] finds the right file for a recorded (path, build-id) and
// caches the loaded images. It looks in the places GDB and Linux perf use:
// /usr/lib/debug/.build-id/xx/yyyy.debug, perf's build-id cache
// (~/.debug/.build-id/xx/yyyy/elf and ~/.debug/<path>/<build-id>/elf) and
// .gnu_debuglink (checked by CRC32). A file whose build-id differs from the
// recording is never read in its place: that is [ErrBuildIDMismatch].
//
// The kernel is symbolized from /proc/kallsyms ([Kernel]) and the vDSO from
// the running process's own copy ([LoadVDSO]), or both from files
// (Options.Kallsyms, Options.VDSO: an archive's).
//
// Formats:
//   - ELF: System V gABI and the x86-64 psABI (PLT layout, .plt.sec for IBT).
//   - Build-id notes and separate debug files: GDB manual, "Debugging
//     Information in Separate Files".
//   - MiniDebugInfo: GDB manual, "Debugging information in a special section".
//   - DWARF 2-5 via debug/dwarf: line programs and inlined subroutines.
//   - /proc/kallsyms: Linux kernel/kallsyms.c.
//   - Symbol mangling: Itanium C++ ABI, Rust legacy and v0.
package symbolize
