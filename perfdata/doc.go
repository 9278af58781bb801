// Package perfdata reads and writes the perf.data file format of Linux perf.
//
// The layout is the one perf has used since 2009 ("PERFILE2", seed 004 of
// this project): a fixed header with the attrs, data and event_types
// sections and a 256-bit feature bitmap; the attr section, whose entries
// point at arrays of sample ids; the data section of records; and, right
// after the data, one (offset, size) section header per set feature bit,
// in bit order, with no holes. Feature contents may live anywhere.
//
// Records are the kernel's perf_event records (include/uapi/linux/perf_event.h)
// plus perf's own user-space records (tools/perf/util/event.h). A SAMPLE
// is decoded by the sample_type of the attr its id points to; other kernel
// records carry a sample_id trailer when the attr has sample_id_all.
//
// The package also reads and writes (NewStream, NewPipeWriter) perf's pipe
// mode (perf record -o -), in which attrs and features arrive as
// HEADER_ATTR, HEADER_FEATURE, HEADER_BUILD_ID and TRACING_DATA records,
// and reads files written on a machine of the other byte order.
//
// Files can be read in parallel: RecordsIn reads a part between record
// boundaries, and Resync guesses a boundary from any offset, which the
// reader of the part before confirms (RecordsUntil, NextOffset).
//
// Reading is zero-copy where it can be: Open maps the file, and the Reader
// reuses one record value per record type, so a record is valid only until
// the next call to Next. Unknown records and unknown features are kept as
// raw bytes so that newer files still read and write back unchanged.
//
// perfdata does no syscalls beyond mapping the file it is asked to open,
// reads no flags and prints nothing.
package perfdata
