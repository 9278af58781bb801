package cli

import (
	"flag"
	"path/filepath"

	"github.com/jitprof/jitprof/internal/sampledb"
)

// SessionDir is --session-dir, the daemon's session directory, as every
// command that reads or writes sessions takes it (report, web, diff,
// daemon, import).
type SessionDir struct{ dir string }

// Register defines --session-dir on fs.
func (d *SessionDir) Register(fs *flag.FlagSet) {
	fs.StringVar(&d.dir, "session-dir", "", "the session `directory` (default $JITPROF_SESSION_DIR, else /var/lib/jitprof for root, ~/.local/share/jitprof for others)")
}

// Dir returns the directory given, or else the default
// (sampledb.DefaultDir).
func (d *SessionDir) Dir() string {
	if d.dir == "" {
		return sampledb.DefaultDir()
	}
	return d.dir
}

// Abs returns Dir made absolute, for the commands that hand it to a
// daemon, which runs in /.
func (d *SessionDir) Abs() (string, error) { return filepath.Abs(d.Dir()) }

// Separate is --separate for the sample database (daemon start, import):
// which fields of a sample keep its sample files apart, as opcontrol
// takes it.
type Separate struct{ sampledb.Separate }

// Register defines --separate on fs.
func (s *Separate) Register(fs *flag.FlagSet) {
	fs.Var(s, "separate", "keep sample files apart by: a comma list of none, lib, kernel, thread, cpu, all")
}

func (s *Separate) Set(v string) (err error) {
	s.Separate, err = sampledb.ParseSeparate(v)
	return err
}
