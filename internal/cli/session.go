package cli

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/jitprof/jitprof/internal/driver"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/internal/sessionsrc"
)

// SessionFlags are report's options for the daemon's sessions:
// --session[=NAME] and --session-dir; the positional arguments are then
// OProfile's profile specification (image:, lib-image:, event:, tgid:,
// tid:, cpu:, session:, bare words meaning image:).
type SessionFlags struct {
	name string
	on   bool
	dir  SessionDir
}

// Register defines --session and --session-dir on fs.
func (s *SessionFlags) Register(fs *flag.FlagSet) {
	fs.Var((*sessionFlag)(s), "session", "report the daemon's session `NAME` (--session alone: current, or the first word if it names a session) instead of a recording; the arguments are then a profile specification: image:, lib-image:, event:, count:, tgid:, tid:, cpu:, session:, bare words for image:")
	s.dir.Register(fs)
}

// sessionFlag is --session with an optional value.
type sessionFlag SessionFlags

func (s *sessionFlag) String() string   { return s.name }
func (s *sessionFlag) IsBoolFlag() bool { return true }
func (s *sessionFlag) Set(v string) error {
	s.on = true
	if v != "true" {
		s.name = v
	}
	return nil
}

func (s *SessionFlags) Enabled() bool { return s.on }

// Source returns the driver's Source of the sessions, with words the
// profile specification.
func (s *SessionFlags) Source(jit *AnonFlags, words []string) (driver.Source, error) {
	dir := s.dir.Dir()
	avail, err := sampledb.Sessions(dir)
	if err != nil {
		return nil, err
	}
	if len(avail) == 0 {
		return nil, fmt.Errorf("%s: no sessions (jitprof daemon start records one)", dir)
	}
	spec, err := sampledb.ParseSpec(specWords(s.name, words, avail))
	if err != nil {
		return nil, err
	}
	return sessionsrc.NewSession(dir, spec, avail, jit.Force), nil
}

// Input opens an input named on the command line: session:NAME, a
// session of the daemon's in --session-dir (session: alone, the current
// one), archive:FILE, an archive (OpenArchive), or else a recording's
// path.
func (s *SessionFlags) Input(jit *AnonFlags, arg string) (driver.Source, error) {
	if path, ok := strings.CutPrefix(arg, "archive:"); ok {
		return OpenArchive(path, jit)
	}
	if name, ok := strings.CutPrefix(arg, "session:"); ok {
		t := *s
		t.name, t.on = name, true
		return t.Source(jit, nil)
	}
	return driver.OpenRecording(arg, jit.Force)
}

// InputFlags are what a command that reports reads: a recording (-i,
// --input), the daemon's sessions (SessionFlags, whose profile
// specification is the positional arguments) or an archive (--archive),
// one of them.
type InputFlags struct {
	path    string
	Session SessionFlags
	Archive ArchiveFlags
}

// Register defines -i, --input, the session flags and --archive on fs.
func (in *InputFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&in.path, "i", "perf.data", "input `file`")
	fs.StringVar(&in.path, "input", "perf.data", "same as -i")
	in.Session.Register(fs)
	in.Archive.Register(fs)
}

// Check checks the positional arguments pos of command cmd, which only
// a session's specification takes, and that a session and an archive
// are not both asked for; it prints what is wrong and returns ErrUsage.
func (in *InputFlags) Check(fs *flag.FlagSet, cmd string, pos []string) error {
	if len(pos) > 0 && !in.Session.Enabled() {
		fs.Usage()
		return ErrUsage
	}
	if in.Session.Enabled() && in.Archive.Enabled() {
		fmt.Fprintf(fs.Output(), "jitprof %s: --session or --archive, not both\n", cmd)
		return ErrUsage
	}
	return nil
}

// Name is the input as a message names it: the recording's path, the
// daemon's session or the archive.
func (in *InputFlags) Name() string {
	switch {
	case in.Session.Enabled():
		return "the daemon's session"
	case in.Archive.Enabled():
		return "the archive"
	}
	return in.path
}

// Source opens the input, with pos the session's specification.
func (in *InputFlags) Source(jit *AnonFlags, pos []string) (driver.Source, error) {
	switch {
	case in.Session.Enabled():
		return in.Session.Source(jit, pos)
	case in.Archive.Enabled():
		return in.Archive.Source(jit)
	}
	return driver.OpenRecording(in.path, jit.Force)
}

// specWords are the words of the profile specification that --session
// NAME and the positional words give, with avail the sessions there are:
// without a NAME, a first word that names a session (and no image: it
// has no colon) selects it, as session:NAME would.
func specWords(name string, words, avail []string) []string {
	if name == "" && len(words) > 0 && !strings.Contains(words[0], ":") && slices.Contains(avail, words[0]) {
		name, words = words[0], words[1:]
	}
	if name != "" {
		words = append([]string{"session:" + name}, words...)
	}
	return words
}
