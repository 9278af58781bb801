// Package anon is the seam between reports and the JIT data that names
// samples in anonymous executable memory (seeds 001 and 000 of the brief).
//
// A Handler understands one JIT data format. For each process with
// anonymous samples, the report asks the handlers, in the order the user
// chose with --anon-handler (or the order of Builtins), whether they understand that
// process's JIT data; the first that claims the process returns a Resolver
// that then names all of that process's anonymous samples, by address and
// time. A handler that declines returns (nil, nil); an error means the data
// is there but unusable (a torn file, a trust check that failed) and is
// shown to the user.
//
// Handlers are built in (perf maps, jitdump, jitlog, PyPy logs) or external:
// --anon-handler=NAME finds an executable jitprof-anon-NAME on PATH (or a
// path) that speaks the line protocol in docs/anon-handlers.md.
package anon
