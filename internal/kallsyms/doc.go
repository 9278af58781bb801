// Package kallsyms parses the kernel's symbol table as /proc/kallsyms
// prints it: one "address type name [module]" line per symbol, the type
// being nm's letter (T and t for text, W and w for weak symbols, D, B, R
// ... for data).
//
// It reads nothing itself: internal/linux reads the file (for the
// recorder's kernel map, and for internal/symbolize's kernel symbols) and
// callers pass its bytes, so the one parser is fuzzed without a kernel.
package kallsyms
