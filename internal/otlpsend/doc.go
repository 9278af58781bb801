// Package otlpsend sends OTLP profiles requests to a Collector, over
// OTLP/HTTP (protobuf, POST to the profiles endpoint) or OTLP/gRPC
// (ProfilesService/Export, with pdata's gRPC client), with TLS (the
// system's roots or a CA file, a client certificate) and the user's
// headers, and sorts each response as the OTLP specification does: sent
// (perhaps in part), to retry (with the server's Retry-After or
// RetryInfo), credentials refused, or rejected for good.
//
// It is linked into jitprof-otlp only (cmd/jitprof-otlp): net/http, TLS
// and gRPC would cost every other jitprof command start-up time.
// internal/delivery decides when to send and what to keep.
package otlpsend
