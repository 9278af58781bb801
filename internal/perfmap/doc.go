// Package perfmap reads and writes the perf map format, the text files
// /tmp/perf-PID.map that JITs (V8's --perf-basic-prof, the JVM's
// perf-map-agent, .NET, LuaJIT, ...) append to so that Linux perf can name
// their generated code.
//
// The format is described in Linux's tools/perf/Documentation/jit-interface.txt:
// one symbol per line,
//
//	START SIZE symbolname
//
// where START and SIZE are hexadecimal (an optional 0x prefix is accepted
// here) and the name is everything after the second field, spaces included.
//
// A perf map carries no times. The only order it has is the order of its
// lines, which is the order the JIT wrote them; Map keeps it.
//
// The package is pure: it does no I/O beyond the io.Reader and io.Writer it
// is given.
package perfmap
