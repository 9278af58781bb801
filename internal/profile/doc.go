// Package profile is jitprof's aggregated profile: the hub every source
// (a perf.data replay, the sample database) turns into and every output
// (text reports, JSON, CSV, pprof, folded stacks) is generated from.
//
// Samples are aggregated, not kept: a sample adds its count and period to
// the entry of its (call stack, thread, CPU, event). Call stacks are
// interned in a trie of frames, frames in a table of (function, line), and
// functions and images in their own tables, so aggregation works on small
// integer ids and no string is built per sample.
//
// The pprof export follows github.com/google/pprof/proto/profile.proto; the
// folded format is the one of Brendan Gregg's stackcollapse scripts
// ("root;caller;leaf count").
package profile
