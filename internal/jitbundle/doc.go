// Package jitbundle encodes the JIT data jitprof record embeds in a
// perf.data: who each recorded process that ran JIT code was (pid, uid,
// gid, start time), and the JIT data files of those processes (perf maps,
// jitdumps, jitlog databases, ...), copied at record time, so that a
// report names JIT code after the files are gone or rewritten and judges
// any file it still reads by the uid the process had, even when the
// process has exited (a process started through su reads as root's then).
//
// Where it lives: since version 2, in the perf.data header's event_types
// section (in pipe mode, HEADER_EVENT_TYPE records), which perf has
// ignored since Linux 3.x in every tool (see perfdata.File.EventTypes).
// Version 1 lived in feature bit 200 (perfdata.FeatJitprof), which perf
// 6.1's inject crashes on; Load still reads it.
//
// The bundle is little-endian:
//
//	magic    [8]byte "JITPBNDL"
//	version  u32     (2; 1 has neither flags, size nor processes)
//	flags    u32     (0)
//	size     u64     bytes from the magic to the end of the last file
//	nprocs   u32     number of processes
//	nfiles   u32     number of files
//	nprocs × process:
//	    pid      u32   in the recording's pid namespace
//	    nspid    u32   in the process's own pid namespace (0: unknown)
//	    uid      u32   filesystem uid, owner of the files it writes
//	    gid      u32   filesystem gid
//	    start    u64   start time, clock ticks since boot (/proc/PID/stat
//	                   field 22; 0: unknown)
//	nfiles × file:
//	    pid      u32
//	    kindLen  u16, kind  [kindLen]byte  ("perfmap", "jitdump", "jitlog", ...; "tsc": see KindTSC)
//	    pathLen  u16, path  [pathLen]byte  (the path the recorder read)
//	    mtime    i64   modification time, Unix nanoseconds
//	    dataLen  u64, data  [dataLen]byte
//
// Version 1 is magic, version, nfiles and the files. What follows size
// in its container (a stream pads to 8 bytes) must be zeros. A reader of
// a later version refuses it rather than misreading it. The package is
// pure: no I/O.
package jitbundle
