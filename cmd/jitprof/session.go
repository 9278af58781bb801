package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/jitprof/jitprof/internal/daemon"
	"github.com/jitprof/jitprof/internal/driver"
	"github.com/jitprof/jitprof/internal/report"
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

// source returns the driver's Source of the sessions, with words the
// profile specification.
func (s *sessionFlags) source(jit *anonFlags, words []string) (driver.Source, error) {
	dir := s.dir
	if dir == "" {
		dir = daemon.DefaultDir()
	}
	avail, err := sampledb.Sessions(dir)
	if err != nil {
		return nil, err
	}
	if len(avail) == 0 {
		return nil, fmt.Errorf("%s: no sessions (jitprof daemon start records one)", dir)
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
		return nil, err
	}
	return sessionsrc.NewSession(dir, spec, avail, jit.force), nil
}

// sessionGraph checks the options of report --session -g: a session
// keeps caller-callee arcs, not stacks, so its call graph is OProfile's
// (callers and callees of each function) in text or JSON. The other
// formats need whole stacks, which arcs cannot be joined into without
// inventing them; rows are functions, so sort keys and perf's filters
// (which the profile specification's tgid:, tid:, cpu: and image: do
// for sessions) do not apply.
func sessionGraph(f driver.Format, view driver.View, filter report.Filter) error {
	switch {
	case f != driver.Text && f != driver.JSON:
		return fmt.Errorf("--session -g: a session's call graph is caller-callee arcs, written as text or json, not %s (which needs whole stacks: record them with jitprof record -g)", f)
	case len(view.SortKeys) > 0 || view.Separate != "" || view.Merge != "":
		return errors.New("--session -g: the call graph is by function: --sort, --separate and --merge do not apply (select with the profile specification: tgid:, tid:, cpu:, image:)")
	case len(filter.Comms)+len(filter.PIDs)+len(filter.TIDs)+len(filter.DSOs)+len(filter.CPUs) > 0:
		return errors.New("--session -g: select samples with the profile specification (tgid:, tid:, cpu:, image:), not perf's filters")
	}
	return nil
}
