// Package profile is jitprof's aggregated profile: the hub every source
// (a perf.data replay, the sample database) turns into and every output
// (text reports, JSON, CSV, pprof, folded stacks, in internal/report) is
// generated from. It renders nothing itself and imports only the
// standard library.
//
// Samples are aggregated, not kept: a sample adds its count and period to
// the entry of its (call stack, thread, CPU, event). Call stacks are
// interned in a trie of frames, frames in a table of (function, line), and
// functions and images in their own tables, so aggregation works on small
// integer ids and no string is built per sample.
package profile
