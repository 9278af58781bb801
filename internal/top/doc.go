// Package top is jitprof top: a live view of what runs, as perf top's,
// with JIT code named while it runs.
//
// It is built on the one collector core, internal/record's Stream, with
// a Sink of its own (live): each round's samples are resolved with
// internal/resolve against the Recorder's processes and mappings, into
// one profile.Builder, as a report resolves a recording's. At each
// refresh the view brings a decayed count per entry up to the Builder's
// (perf top's: an eighth lost each refresh, or with -z only the last
// interval's) and computes rows from them with internal/report's sort
// keys and filters. With -g the samples' callchains are resolved too,
// and rows have report -g's children and self, a plain report its
// trees.
//
// A view stays bounded however long it runs, as perf top's: entries
// whose decayed count falls to nothing are dropped, and beyond
// maxEntries the smallest; once the dropped are most of the Builder, a
// new one takes those left with only what they reach (compact), and the
// Recorder forgets processes a while after they exit.
//
// JIT code is named by the anon handlers a report uses, bound to the
// live processes (anonbind); when samples fall in JIT code no handler
// named, the handlers are made anew, at most every half second, and
// read the JIT data as it is then: a perf map that grew, a jitdump or
// jitlog written on, a PyPy log. jitdump and jitlog name code by time, so the
// generations a JIT put at one address stay apart. Processes that start
// after top are followed as the recorder follows them.
//
// The terminal UI uses github.com/gdamore/tcell (terminfo, so it works
// over SSH in any terminal TERM names; reverse video, no colours) and
// gives the terminal back on every way out (see runTUI); --stdio prints
// a plain report each interval instead.
package top
