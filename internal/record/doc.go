// Package record is jitprof's recorder, the engine of `jitprof record`: it
// opens sampling events on a command, processes, threads or whole CPUs
// through internal/perfevent, drains their rings into a perf.data file
// (package perfdata) that Linux perf reads, and finishes the file the way
// perf record does. A command given with processes, threads or CPUs is a
// workload, as in perf record -a -- sleep 5: it runs while they are
// recorded, and its end ends the recording.
//
// The file holds the raw kernel records as the rings gave them, separated
// into rounds by FINISHED_ROUND records so perf can sort them by time; the
// COMM and MMAP2 records of processes that existed before recording,
// synthesized from /proc, and the kernel's [kernel.kallsyms]_text MMAP;
// and, at the end, the BUILD_ID feature for every image a sample hit, plus
// the header features perf report --header-only shows (hostname,
// osrelease, version, arch, nrcpus, cpudesc, cpuid, total memory, cmdline,
// event description, clock resolution and clock data, sample time).
//
// Sample times come from CLOCK_MONOTONIC, the clock JIT logs are stamped
// with, so they line up without conversion. The events are enabled
// before /proc is read, so that a mapping made meanwhile is not missed,
// but sampling begins after, as perf's does: the samples taken while
// /proc was read are dropped, and a duration counts from then.
//
// The Writer flushes at every round, so a recorder that is killed leaves a
// file that reads to its last whole record.
//
// Run is one recording into perf.data, in named steps: parse the event,
// start the target (a command stopped until its events are enabled),
// open the events, open the sink, write what precedes the samples (the
// kernel's mapping, the processes already running), let the command
// run, drain the rings until the recording ends, stop, and finish the
// file (file.go).
//
// The drain loop does not know perf.data: a Recorder writes every
// record through a Sink: Raw for the kernel's records as the rings hold
// them, Record for those it makes from /proc, and EndRound at the end of
// each round, with the Recorder, whose Tracker the round's samples
// resolve against and whose Identity says who each process is. Stream
// runs the same recording into the Sink a caller opens, for a collector
// such as the daemon that keeps samples elsewhere; the Recorder it
// returns holds the processes and mappings and who each process was.
package record
