// Package pypyview is the loop view of seed 002's long-term goal (the
// jitviewer join): the hot loops and bridges of a PyPy process, with
// their share of a recording's samples, their source position and their
// optimised trace, each hot bridge under the loop it belongs to, and the
// trace's operations marked by the samples in their machine code (the
// +OFF offsets of jit-log-opt).
//
// It is pure: a log (internal/pypylog) and samples in, a view out, as
// text or JSON. jitprof pypy loops reads the recording.
package pypyview
