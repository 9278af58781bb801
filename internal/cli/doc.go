// Package cli holds what jitprof's two executables, cmd/jitprof and
// cmd/jitprof-web, share on their command lines: flags parsed anywhere
// among the positional arguments as perf parses them, errors and usage
// that spell options as users type them (--name, -x), the exit status a
// command's error gives, and the flag groups more than one command takes:
// the JIT options (AnonFlags), perf report's sample filters (FilterFlags),
// the daemon's sessions (SessionFlags) and OTLP's resource and exporter
// (OTLPFlags).
// Each group turns its flags into the options of internal/driver; none
// does any work of its own.
package cli
