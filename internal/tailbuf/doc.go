// Package tailbuf keeps the last bytes a child process writes to its
// standard error, to quote in the error that says why it failed: the
// external JIT handlers' (internal/anon) and jitprof-otlp's
// (internal/delivery).
package tailbuf
