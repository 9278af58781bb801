// Package trust is jitprof's one policy for reading files that another
// user can write: perf maps, jitdumps and jitlog databases, which JITs
// write into /tmp or their own directories and which jitprof, often run as
// root, reads to name JIT code (docs/security.md says why each rule).
//
// A file is read only when all of these hold:
//
//   - no symlink anywhere in its path is followed, and no /proc magic link
//     (openat2 with RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS, or a walk of
//     O_NOFOLLOW opens one component at a time where the kernel lacks
//     openat2);
//   - a path inside a process's root (/proc/PID/root) is resolved inside
//     that root (RESOLVE_IN_ROOT): the process's mount namespace decides
//     what the path names, so nothing it says is believed but its owner;
//   - the file is opened O_PATH first, so that opening a FIFO or a device
//     bind-mounted where a JIT file should be never blocks or wakes a
//     driver, and is read only once fstat says it is a regular file;
//   - it belongs to the uid the caller expects, the uid of the process
//     whose data it is (root ownership proves nothing: a user can
//     bind-mount a root-owned file in a mount namespace of their own);
//   - it has one link (a hard link to someone else's file has two);
//   - it is at most MaxSize bytes (or the caller's lower limit).
//
// Force (jitprof's --force) accepts a file of another owner, with more
// links, or over the size limit. It never makes jitprof follow a symlink,
// open anything but a regular file, or quote a file's bytes in a message.
//
// Files that data names rather than the user (images a recording names,
// debug files, source files an image's DWARF names) are opened by
// OpenNamed: regular files only, never blocking, and, as root, with the
// rights of the user whose word the path is (their filesystem uid and gid
// on a thread of its own), so no user can make root's jitprof read a
// file that user could not. OpenRecording opens the recording given on
// the command line, refusing, as perf does, one owned by neither the
// user running jitprof nor root.
//
// CheckDense refuses a file with holes where it is to be copied (a sparse
// file costs its writer nothing). OpenOwnDir opens a directory jitprof
// writes in (the daemon's session) only if no other user can write it or
// a directory above it, and OpenEntry opens an entry of it without
// following a link.
//
// Refusals wrap ErrUntrusted; a missing file wraps fs.ErrNotExist.
package trust
