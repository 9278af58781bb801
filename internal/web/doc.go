// Package web serves jitprof's interactive view of a recording (jitprof
// web): pprof's web UI — flame graph, top, graph, peek, source and
// disassembly — embedded through github.com/google/pprof/driver, with
// pages of jitprof's own beside it.
//
// pprof is given the profile jitprof built (internal/profile's pprof
// export) through a Fetcher, symbolizes nothing itself, and reads code
// through an ObjTool that disassembles JIT code from the bytes its JIT
// logged and ELF images through internal/symbolize. A driver serves one
// profile, so every selection of the recording — one process or
// thread, JIT or native code, one event — gets a driver of its own,
// started when first viewed and kept among the last few. Its handlers are
// mounted under /ui/SELECTION/, and its pages get jitprof's bar (the
// selector, the other pages) and marks on JIT code, named by handler and
// generation.
//
// jitprof's pages: /recording, the recording's header (event, rate,
// samples, lost samples, time span, command, notes) with which anon
// handler named each process's JIT code and the processes and threads;
// /generations, the generations of one JIT function side by side: when
// each was there, where, its size, its samples and its code.
//
// The server listens where its caller says and answers only requests
// that carry its random token (URL, guard.go), on a loopback address only
// for that address or localhost. pprof's source view reads copies of the
// source files, made with the rights of the user whose data named them
// (sources.go), never the files themselves.
package web
