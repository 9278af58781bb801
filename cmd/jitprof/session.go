package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/anonbind"
	"github.com/jitprof/jitprof/internal/daemon"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/replay"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/internal/sessionsrc"
)

// sessionFlags are report's options for the daemon's sessions:
// --session[=NAME] and --session-dir; the positional arguments are then
// OProfile's profile specification (image:, lib-image:, event:, tgid:,
// tid:, cpu:, session:, bare words meaning image:).
type sessionFlags struct {
	name string
	on   bool
	dir  string
}

func (s *sessionFlags) register(fs *flag.FlagSet) {
	fs.Var((*sessionFlag)(s), "session", "report the daemon's session `NAME` (--session alone: current, or the first word if it names a session) instead of a recording; the arguments are then a profile specification: image:, lib-image:, event:, count:, tgid:, tid:, cpu:, session:, bare words for image:")
	fs.StringVar(&s.dir, "session-dir", "", "the daemon's session `directory` (default as jitprof daemon's)")
}

// sessionFlag is --session with an optional value.
type sessionFlag sessionFlags

func (s *sessionFlag) String() string   { return s.name }
func (s *sessionFlag) IsBoolFlag() bool { return true }
func (s *sessionFlag) Set(v string) error {
	s.on = true
	if v != "true" {
		s.name = v
	}
	return nil
}

func (s *sessionFlags) enabled() bool { return s.on }

// loader returns what loads the sessions instead of a recording, with
// words the profile specification, in the form of anonFlags.load.
func (s *sessionFlags) loader(jit *anonFlags, words []string) func(cmd, input string, sopts replay.Options) (*profile.Profile, *anonbind.Binder, func(), error) {
	return func(cmd, _ string, sopts replay.Options) (*profile.Profile, *anonbind.Binder, func(), error) {
		dir := s.dir
		if dir == "" {
			dir = daemon.DefaultDir()
		}
		avail, err := sampledb.Sessions(dir)
		if err != nil {
			return nil, nil, nil, err
		}
		if len(avail) == 0 {
			return nil, nil, nil, fmt.Errorf("%s: no sessions (jitprof daemon start records one)", dir)
		}
		name := s.name
		if name == "" && len(words) > 0 && !strings.Contains(words[0], ":") && slices.Contains(avail, words[0]) {
			name, words = words[0], words[1:]
		}
		if name != "" {
			words = append([]string{"session:" + name}, words...)
		}
		spec, err := sampledb.ParseSpec(words)
		if err != nil {
			return nil, nil, nil, err
		}
		opts := sessionsrc.Options{Dir: dir, Spec: spec, Force: jit.force, Lines: sopts.Lines}
		if jit.enabled() {
			if opts.Anon, err = (anon.ExternalOptions{Budget: jit.budget}).Select(jit.handlers); err != nil {
				return nil, nil, nil, err
			}
		}
		p, binder, info, err := sessionsrc.Load(opts)
		if err != nil {
			return nil, nil, nil, err
		}
		if info.Files == 0 {
			return nil, nil, nil, errors.New("the profile specification selects no sample files (sessions: " + strings.Join(avail, ", ") + ")")
		}
		for _, e := range info.Unreadable {
			fmt.Fprintf(os.Stderr, "jitprof %s: skipped: %v\n", cmd, e)
		}
		if info.CallGraph > 0 && !sopts.LeafOnly {
			fmt.Fprintf(os.Stderr, "jitprof %s: the session's %d call-graph files hold caller-callee arcs, not stacks: this report shows flat samples\n", cmd, info.CallGraph)
		}
		if binder != nil {
			reportClaims(os.Stderr, cmd, binder.Claims(), jit.verbose)
		}
		return p, binder, func() {}, nil
	}
}
