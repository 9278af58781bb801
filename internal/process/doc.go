// Package process follows processes, the names of their threads and
// their mappings over time, from the records that tell of them (mmaps,
// renames and execs, forks: perf_event's MMAP, MMAP2, COMM and FORK, from
// a recording or straight from the kernel's ring buffers), and answers
// which mapping held an address of a process at a time.
//
// One Tracker serves every user: a perf.data replay feeds it a whole
// recording and then asks it from several goroutines (Settle); the
// recorder feeds it as its rings drain and asks it which images samples
// hit; a collector that resolves samples as they arrive does the same.
// Records of different CPUs arrive out of order, so the Tracker orders
// what it is told by time, as perf's ordered-events queue does, and
// derives each process's address spaces (a generation per fork or exec)
// lazily from that, per process.
package process
