// Package sampledb is the sample database of jitprof's daemon (seed 003,
// OProfile's sample files, with seed 000's sequence numbers): counts of
// samples kept in files, one per combination of the fields --separate
// keeps, so a profile of a week costs the space of a profile of a minute.
//
// It has four parts, specified in docs/sample-files.md:
//
//   - Names. A FileKey (application, image, call-graph target, event,
//     tgid, tid, cpu) is a file's path in a session, OProfile's
//     {root}/APP/{dep}/{root}/IMAGE/EVENT.COUNT.UNITMASK.TGID.TID.CPU
//     with every image path mangled so that none can leave the session
//     directory or collide with another; [Name] and [Parse] are inverses.
//   - The file format: a little-endian, versioned header, then a hash
//     table of (key1, key2) to a u64 count that grows by doubling in
//     place. Writes publish with one atomic store each, in an order that
//     leaves a valid file at every instant, so a daemon killed at any
//     point leaves files that read (OProfile's libdb is the model).
//     [Read] and [OpenFile] check everything and never panic.
//   - The [DB], for the daemon: images interned by kernel identity (the
//     dcookie cache), samples counted in memory by [DB.Add] without
//     allocating, files created and written by [DB.Flush], a bounded set
//     of open files, sessions saved and reset, the directory locked
//     against a second daemon.
//   - Reading sessions for reports: [Sessions], [ReadMeta], OProfile's
//     profile specification ([ParseSpec]), [Select] and [Open].
//
// The package's only system calls are its own mmap, fallocate and flock
// (golang.org/x/sys/unix); what the counts mean is the report driver's
// business.
package sampledb
