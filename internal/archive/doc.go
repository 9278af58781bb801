// Package archive is the format of jitprof archive: one file holding a
// recording (or a session of the daemon's) with every file a report of it
// reads on the machine it was made on, so that a report of the archive on
// another machine, where those files are gone or differ, says the same
// (perf archive and OProfile's oparchive do this for their tools).
//
// An archive is a gzip-compressed tar stream (POSIX ustar/PAX, as the
// tar command reads it). Its first entry is a manifest, jitprof-archive.json
// (Manifest), listing every other entry with its role, the path it had and
// its size; then come the entries, regular files only:
//
//	perf.data              the recording (kind "recording")
//	session/NAME/...       a session's sample files and JIT data (kind "session")
//	root/PATH              an image, debug file or source file, at the path
//	                       it had (debug files at /usr/lib/debug/.build-id/xx/yyyy.debug)
//	kallsyms               the kernel's symbols when the recording was archived
//	vdso                   the vDSO image of that boot
//
// An archive read back is hostile input. Reader checks every entry before
// a byte of it is used: a name the manifest lists, relative, without "..",
// under one of the names above; a regular file of the listed size; sizes
// within Limits; no entry twice. Extract writes entries only beneath a
// fresh directory, through an os.Root, creating files that did not exist.
package archive
