// Command jitprof is a sampling profiler that names JIT-compiled code.
// main only wires the subcommands; each lives in its own file, registers
// itself and parses its flags into the options of the package that does
// the work: internal/driver for report and annotate (open the input,
// bind the JIT handlers, load, filter, write), internal/record for
// record, internal/dump, internal/pathtime and internal/pypyview for the
// others. Flag groups more than one command takes are internal/cli's;
// web and top exec jitprof-web and jitprof-top (cmd/jitprof-web,
// cmd/jitprof-top), executables of their own.
package main
