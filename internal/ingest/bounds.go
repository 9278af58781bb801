package ingest

import "fmt"

// The JIT data of a process is its user's to write, so everything the
// daemon does with it is bounded: the bytes it copies into the session
// (per process and in all: Config.MaxJITData, MaxJITDataPerProcess), the
// code it keeps in memory, and the work it does for it between two
// drains of the rings, so that no process's JIT data can keep the daemon
// from sampling, flushing or answering its socket.

// Default bounds of the JIT data copied into a session. A Node.js
// service's perf map after a day is tens of MB, a jitdump with the code
// of every function a JVM or V8 compiled a few hundred: 256 MiB keeps
// the largest whole, and 1 GiB the data of a machine's JIT processes for
// days, before `daemon save` or `reset` starts a session afresh.
const (
	DefaultMaxJITData           = 1 << 30
	DefaultMaxJITDataPerProcess = 256 << 20
)

// Default bounds of a session's sample files. A system-wide session of
// weeks with --separate=lib keeps a few thousand files of a few KB;
// thread and CPU separation on a large machine tens of thousands.
const (
	DefaultMaxSampleFiles = 1 << 16
	DefaultMaxSampleData  = 2 << 30
)

// Bounds of the code the daemon keeps in memory: a generation of code
// costs it about 100 bytes, a perf map's line as much again with its
// name. 512 Ki generations is a perf map of a large Node.js service;
// 2 Mi, about 300 MB at worst, are all the daemon keeps.
const (
	maxEntriesPerProcess = 1 << 19
	maxEntries           = 1 << 21
)

// Bounds of what unwinding user stacks keeps (--call-graph dwarf): the
// compiled unwinding information JITs logged for their code (a table
// can take more memory than the bytes it was compiled from, which the
// bounds above count), per process and in all; the stacks of a round's
// samples waiting for the round to be in (past it, a sample is unwound
// as it comes); and the tables of the images met, kept across rounds
// until they pass maxImageTables or the mappings met pass
// maxImageMappings, when the unwinder starts afresh and reads the
// tables again from the cache directory.
const (
	maxJITTablesPerProcess = 32 << 20
	maxJITTables           = 128 << 20
	maxKeptStacks          = 64 << 20
	maxImageTables         = 256 << 20
	maxImageMappings       = 1 << 16
)

// Bounds of the work done on JIT data: records applied and bytes read,
// at most recordRate and byteRate a second on average, at most a
// round's length of that in one round (a round is one drain of the
// rings, 100 ms or less, up to 500 ms in a daemon sampling at a low
// rate; a tenth of a second's in a shorter one) and a quarter of a
// round's for one process. A JIT that loads
// code faster than this (V8 starting a large program loads some
// thousands of functions a second) is followed with a delay; one that
// loads without end is followed at this rate, in about a tenth of one
// CPU.
const (
	recordRate = 1 << 16 // 65,536 records/s
	byteRate   = 16 << 20
	// copyPerFlush bounds the bytes of JIT data copied into the session
	// at one flush (copy_file_range: the kernel copies them).
	copyPerFlush = 64 << 20
)

// work is what may still be done on JIT data in this round.
type work struct {
	records, bytes int64
}

func (w work) done() bool { return w.records <= 0 || w.bytes <= 0 }

// share is the part of the round's work one process may do: a quarter
// of a round's.
func (b *budget) share() work {
	return work{min(b.left.records, b.round*recordRate/4e9), min(b.left.bytes, b.round*byteRate/4e9)}
}

// budget refills the round's work at recordRate and byteRate.
type budget struct {
	left  work
	at    uint64 // when it was last refilled, CLOCK_MONOTONIC ns
	round int64  // the round's length, ns: at least a tenth of a second
}

// minRound is the least round length the work is bounded by: rounds
// shorter than record.PollInterval get as much.
const minRound = 1e8

// refill adds the work earned since the last refill, up to a round's:
// that of the time since (at most a second), at least a tenth of a
// second's. A daemon sampling at a low rate has longer rounds
// (record.Config.RoundEvery), which get their length's work, so that
// the rate at which JIT data is followed does not fall with them.
func (b *budget) refill(now uint64) {
	dt := min(now-min(now, b.at), 1e9)
	if b.at == 0 {
		dt = minRound
	}
	b.at = now
	b.round = max(int64(dt), minRound)
	b.left.records = min(b.left.records+int64(dt)*recordRate/1e9, b.round*recordRate/1e9)
	b.left.bytes = min(b.left.bytes+int64(dt)*byteRate/1e9, b.round*byteRate/1e9)
}

// spend takes what a process used of its share.
func (b *budget) spend(share, left work) {
	b.left.records -= share.records - left.records
	b.left.bytes -= share.bytes - left.bytes
}

// jitRoom is what the bounds on JIT data leave a process.
type jitRoom struct {
	bytes   int64 // bytes it may still add to the session
	entries int   // code it may hold in memory
	tables  int64 // bytes of unwinding tables of its code it may hold
	// why says which bound the room ends at.
	bytesWhy, entriesWhy string
}

// errBound says a process's JIT data met a bound: the daemon follows no
// more of it, and keys its later samples by what it had.
type errBound struct {
	what string
	err  error // the data's error it is, if any (pypylog.ErrFormat)
}

func (e *errBound) Error() string { return e.what + "; later JIT code is not followed" }
func (e *errBound) Unwrap() error { return e.err }

func boundErr(format string, args ...any) error { return &errBound{what: fmt.Sprintf(format, args...)} }

// dataBound is the bound of data that are not what they should be: err,
// of the file at path, which it wraps.
func dataBound(path string, err error) error {
	return &errBound{what: path + ": " + err.Error(), err: err}
}

// mib shows a bound in MiB.
func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }
