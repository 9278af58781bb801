// Package diff compares profiles as perf diff does: the rows of a
// baseline and of one or more newer profiles, matched by their sort
// keys (dso,sym by default), each with the baseline's share and a
// computed change (delta, delta-abs, ratio or wdiff:W1,W2), sorted by
// the change.
//
// What perf diff cannot do is match JIT code: its names carry what
// differs from run to run of one program — addresses, jitprof's
// generation numbers, a runtime's tier marks (V8's ~ ^ + * and its
// JS:/LazyCompile: kinds, HotSpot's frame annotations, PyPy's loop
// numbers). Normalize removes them from the names of JIT code (images of
// kind profile.ImageAnon) and says which rule changed a name, so that
// each row of a comparison can say how it was matched; Options.Exact
// keeps names as they are. File images are matched by base name, as
// perf matches by its short names.
//
// The package computes and writes (text as perf diff, JSON, CSV, a pprof
// profile with the baseline's values negated as pprof -diff_base makes
// it); it reads no files and prints nothing else.
package diff
