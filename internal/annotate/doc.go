// Package annotate prints a function's machine code with each
// instruction's share of the samples taken in it, interleaved with the
// source lines DWARF names, as perf annotate --stdio does.
//
// The samples come from a profile loaded with
// perfdatasrc.Options{Addresses: true}; the code bytes from the image's ELF file, disassembled with
// golang.org/x/arch/x86/x86asm (x86-64 only).
package annotate
