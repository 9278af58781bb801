package jitlogdb

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/jitlog"
)

// TestLocate: -p PID names this process's database in DefaultDir, owned
// by its user; a path is read as the user running jitprof's.
func TestLocate(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("JITPROF_JITLOG_DIR", dir)
	db := Locate(os.Getpid(), "", false)
	if want := filepath.Join(dir, "anon."+strconv.Itoa(os.Getpid())); db.Path != want || db.Owner != os.Geteuid() {
		t.Errorf("Locate(self) = %+v, want %s owned by %d", db, want, os.Geteuid())
	}
	if db := Locate(0, "x/anon.1", true); db.Path != "x/anon.1" || db.Owner != os.Geteuid() || !db.Force {
		t.Errorf("Locate(path) = %+v", db)
	}
}

// TestDump: every record on a line of its own, after the database's
// name; a file that is no database is an error, not a warning.
func TestDump(t *testing.T) {
	dir := t.TempDir()
	l, err := jitlog.Open(jitlog.Options{Dir: dir, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CodeLoad(0x1000, 16, "f", nil); err != nil {
		t.Fatal(err)
	}
	path := l.Path()
	l.Close()
	var out, warn bytes.Buffer
	if err := Dump(&out, &warn, Locate(0, path, false)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if lines[0] != "# "+path || !strings.HasPrefix(lines[1], "header ") || !strings.Contains(out.String(), `name="f"`) {
		t.Errorf("dump:\n%s", out.String())
	}
	if warn.Len() > 0 {
		t.Errorf("warnings for a whole database: %s", warn.String())
	}
	bad := filepath.Join(dir, "anon.2")
	if err := os.WriteFile(bad, []byte("not a database, not at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Dump(&out, &warn, Locate(0, bad, false)); err == nil {
		t.Error("a file that is no database dumped without an error")
	}
}

// TestClean: a database of a process that is gone is removed and named;
// the running process's stays.
func TestClean(t *testing.T) {
	dir := t.TempDir()
	l, err := jitlog.Open(jitlog.Options{Dir: dir, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out bytes.Buffer
	if err := Clean(&out, dir); err != nil {
		t.Fatal(err)
	}
	if want := "nothing to remove in " + dir + "\n"; out.String() != want {
		t.Errorf("clean with only a live database: %q, want %q", out.String(), want)
	}
	if _, err := os.Stat(l.Path()); err != nil {
		t.Errorf("the live process's database: %v", err)
	}
}
