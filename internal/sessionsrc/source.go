package sessionsrc

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jitprof/jitprof/internal/anonbind"
	"github.com/jitprof/jitprof/internal/driver"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/sampledb"
)

// Session is the driver.Source of the sample files of a session
// directory that a profile specification selects: what jitprof report
// --session reads, through the same driver as a recording.
type Session struct {
	dir      string
	spec     *sampledb.Spec
	force    bool
	avail    []string // the directory's sessions, for messages
	warnings []string
	info     Info
}

// NewSession returns the Source of the files spec selects in dir, whose
// sessions are avail.
func NewSession(dir string, spec *sampledb.Spec, avail []string, force bool) *Session {
	return &Session{dir: dir, spec: spec, avail: avail, force: force}
}

// Name says which sessions of which directory are read.
func (s *Session) Name() string {
	if len(s.info.Sessions) == 0 {
		return s.dir
	}
	return fmt.Sprintf("%s (session %s)", s.dir, strings.Join(s.info.Sessions, ", "))
}

// Load reads the selected sample files into a flat profile: sample files
// keep no stacks. With lo.Arcs it reads the caller-callee arcs of the
// {cg} files too (Profile.Arcs), and is an error for a session without
// them; otherwise it says it leaves them out where a report would want
// stacks.
func (s *Session) Load(_ context.Context, lo driver.LoadOptions, bind func(anonbind.Processes) *anonbind.Binder) (*profile.Profile, error) {
	p, _, info, err := Load(Options{Dir: s.dir, Spec: s.spec, Force: s.force, Lines: lo.Lines, Addresses: lo.Addresses, Bind: bind, Arcs: lo.Arcs, Symbolizer: lo.Symbolizer})
	s.info = info
	if err != nil {
		return nil, err
	}
	if info.Files == 0 {
		return nil, errors.New("the profile specification selects no sample files (sessions: " + strings.Join(s.avail, ", ") + ")")
	}
	for _, e := range info.Unreadable {
		s.warnings = append(s.warnings, fmt.Sprintf("skipped: %v", e))
	}
	if lo.Arcs && info.CallGraph == 0 {
		return nil, ErrNoCallGraph
	}
	if info.CallGraph > 0 && !lo.LeafOnly && !lo.Arcs {
		s.warnings = append(s.warnings, fmt.Sprintf("the session's %d call-graph files hold caller-callee arcs, not stacks: this report shows flat samples", info.CallGraph))
	}
	return p, nil
}

// ErrNoCallGraph is Load's error for -g on sample files without
// call-graph files.
var ErrNoCallGraph = errors.New("-g: the selected sample files have no call-graph ({cg}) files: the daemon counts them when started with -g (jitprof daemon start -g)")

// Warnings are the sample files that did not read, and what a report
// could not show.
func (s *Session) Warnings() []string { return s.warnings }

// Close releases nothing: Load reads the files and closes them.
func (s *Session) Close() error { return nil }

var _ driver.Source = (*Session)(nil)
