// Command jitprof-otlp sends OTLP profiles batches for jitprof: jitprof
// push and the daemon (internal/delivery's Child) run it with the
// endpoint's settings as flags, write batches to its standard input and
// read, for each, how the attempt went (the protocol is
// internal/delivery's). Headers, which hold tokens, come from
// OTEL_EXPORTER_OTLP_HEADERS in its environment or the file of
// --headers-file, never its command line.
//
// It is an executable of its own because OTLP over HTTP and gRPC needs
// net/http, TLS and gRPC, whose package initialization would slow the
// start of every jitprof command (docs/architecture.md).
package main
