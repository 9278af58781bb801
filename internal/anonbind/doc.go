// Package anonbind connects the anonymous-sample handlers of internal/anon
// to a recording being replayed by internal/session: it builds what a
// handler sees of each recorded process (its mappings over time, the JIT
// data the recorder embedded in perf.data, where its files live now),
// lets the handlers claim processes lazily, on the first anonymous sample
// of each, and answers session's AnonResolver with what the claiming
// handler says.
package anonbind
