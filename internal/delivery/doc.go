// Package delivery gets OTLP profiles requests to a Collector without
// losing them: a spool of unsent batches in a directory (Spool: bounded
// in bytes, the oldest dropped first and counted, kept across restarts;
// the batch put last also kept in memory, which the Sender takes instead
// of reading its file back),
// a Sender that takes batches without ever waiting for the network and
// sends them oldest first, retrying as the OTLP specification says
// (exponential backoff with jitter, the server's Retry-After or
// RetryInfo honoured), and its Status (endpoint, last success, batches
// and bytes sent, queued and dropped, the last error) for the daemon's
// status.
//
// The network is not here: an Exporter makes one attempt at a batch and
// says how it went (Result). The one jitprof uses is Child, which runs
// jitprof-otlp (cmd/jitprof-otlp, internal/otlpsend) and talks to it
// over pipes (protocol.go): OTLP over HTTP and gRPC needs net/http, TLS
// and gRPC, whose package initialization would slow every jitprof
// command's start, and so live in an executable of their own. Secrets
// (headers with tokens) reach that process by its environment or a file
// it reads, never its command line (Config).
//
// Config resolves the exporter's settings from jitprof's flags and the
// OpenTelemetry SDKs' environment variables
// (https://opentelemetry.io/docs/specs/otel/protocol/exporter/).
package delivery
