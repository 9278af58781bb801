// Package outfile writes the files jitprof puts at a path its user gave
// (record -o, report -o, annotate -o), in directories that another user
// may own: their project, or /tmp where fs.protected_symlinks is 0.
//
// Such a user can put a symlink, a FIFO or a link to a device at the
// path before jitprof, often root, opens it, or swap one in while it
// runs. So an output is never opened at its path. It is written to a
// temporary beside it, created O_EXCL|O_NOFOLLOW (a new inode of
// jitprof's, whatever the user put there), and renamed over the path,
// which replaces whatever the path names without following it. A path
// that names a symlink or anything but a regular file when jitprof
// starts is refused: jitprof would not write where the user meant.
// perf record's habit of keeping a non-empty previous output as
// FILE.old is two renames in the same directory, which no link planted
// between them can redirect. Every name is resolved relative to one
// descriptor of the directory.
package outfile
