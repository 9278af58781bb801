package jitlogdb

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/jitprof/jitprof/jitlog"
)

// DefaultDir is where JITs write their databases unless told otherwise:
// $JITPROF_JITLOG_DIR, else /tmp/jitprof-UID (jitlog.DefaultDir).
func DefaultDir() string { return jitlog.DefaultDir() }

// Database is a database to read and the uid it must belong to
// (internal/trust): that process's user for a running process's
// database, the user running jitprof for any other.
type Database struct {
	Path  string
	Owner int
	// Force reads a database owned by another user than Owner, with
	// several links, or over the size limit.
	Force bool
}

// Locate returns process pid's database in DefaultDir when path is "",
// else the database at path.
func Locate(pid int, path string, force bool) Database {
	db := Database{Path: path, Owner: os.Geteuid(), Force: force}
	if path == "" {
		db.Path = jitlog.DatabasePath(jitlog.DefaultDir(), pid)
		if uid, ok := jitlog.ProcessOwner(pid); ok {
			db.Owner = uid
		}
	}
	return db
}

// Scan calls fn with each record of the database, one at a time,
// keeping none: databases can be bigger than memory. A torn last record
// (the JIT was killed) after at least one whole one is written to warn
// as a warning of command cmd, the records before it read; fn's errors
// are returned as they are.
func Scan(db Database, cmd string, warn io.Writer, fn func(jitlog.Record) error) error {
	n := 0
	err := jitlog.Scan(db.Path, &jitlog.ReadOptions{Owner: db.Owner, Force: db.Force}, func(r jitlog.Record) error {
		n++
		return fn(r)
	})
	if err != nil && (n == 0 || !errors.Is(err, jitlog.ErrTorn)) {
		return err
	}
	if err != nil {
		fmt.Fprintf(warn, "jitprof %s: warning: %v\n", cmd, err)
	}
	return nil
}

// Dump writes the database's records to w, one line each (jitlog.Line),
// in file order, after a line naming it.
func Dump(w, warn io.Writer, db Database) error {
	fmt.Fprintf(w, "# %s\n", db.Path)
	return Scan(db, "jitlog dump", warn, func(r jitlog.Record) error {
		_, err := fmt.Fprintln(w, jitlog.Line(r))
		return err
	})
}

// Clean removes the databases in dir of processes that are gone, as the
// start of a session asks, and says on w what it removed; live
// processes' stay.
func Clean(w io.Writer, dir string) error {
	removed, err := jitlog.Cleanup(dir)
	for _, p := range removed {
		fmt.Fprintf(w, "removed %s\n", p)
	}
	if err != nil {
		return err // it names the directory or file
	}
	if len(removed) == 0 {
		fmt.Fprintf(w, "nothing to remove in %s\n", dir)
	}
	return nil
}
