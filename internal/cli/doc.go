// Package cli holds what jitprof's executables share on their command
// lines: flags parsed anywhere among the positional arguments as perf
// parses them, errors and usage that spell options as users type them
// (--name, -x), the exit status a command's error gives, and the flag
// groups more than one command takes, each parsed one way with one help
// text: the input (InputFlags: a recording, the daemon's sessions with
// SessionFlags, an archive), the session directory (SessionDir), the
// sample database's --separate (Separate), sizes (Size), the JIT options
// (AnonFlags), perf report's sample filters (FilterFlags) and OTLP's
// resource and exporter (OTLPFlags). What to sample (-e, -F, -c, -a, -p,
// ...) is the group of internal/cli/sampling, apart so that the commands
// that only read link no perf_event_open.
// Each group turns its flags into the options of the package that does
// the work; none does any work of its own.
package cli
