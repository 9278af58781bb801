// Package golden checks test output against golden files in testdata/,
// with the one -update flag every package's tests share, as google/pprof
// does: `go test ./... -update` rewrites them, and a mismatch shows the
// first differing line.
package golden
