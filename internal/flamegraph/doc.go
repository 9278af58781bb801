// Package flamegraph renders a profile (internal/profile) as one
// self-contained HTML flame graph, for people who cannot run jitprof
// web's server: its script, style and data are in the page, which
// fetches nothing when viewed.
//
// The graph is Brendan Gregg's flame graph (the stacks of one event
// merged from the root, each frame as wide as its samples, siblings in
// name order) drawn as an icicle, root on top, with the command name as
// the first frame as stackcollapse-perf makes it. Frames in JIT code are
// drawn in their own colours and say which handler named them and their
// generation; a table of the functions with the most samples of their
// own follows the graph.
package flamegraph
