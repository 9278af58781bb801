package main

import (
	"flag"
	"strings"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/anonbind"
	"github.com/jitprof/jitprof/internal/session"
	"github.com/jitprof/jitprof/perfdata"
)

// anonFlags are the JIT-code options of the commands that read a
// recording: --anon-samples, --anon-handler and --force.
type anonFlags struct {
	samples  bool
	handlers multiFlag
	force    bool
}

func (a *anonFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&a.samples, "anon-samples", false, "include samples in anonymous executable memory (JIT code), named by the anon handlers where they can")
	fs.Var(&a.handlers, "anon-handler", "JIT data `handler`s to try, in order (repeatable or comma-separated; built in: jitlog, jitdump, perfmap; NAME runs jitprof-anon-NAME); implies --anon-samples")
	fs.BoolVar(&a.force, "force", false, "read JIT data files that fail the ownership, symlink and size checks")
}

func (a *anonFlags) enabled() bool { return a.samples || len(a.handlers) > 0 }

// bind sets up the handlers for f in sopts (building its timeline) when
// the flags ask for JIT code, and returns the binder to close, or nil.
func (a *anonFlags) bind(f *perfdata.File, sopts *session.Options) (*anonbind.Binder, error) {
	if !a.enabled() {
		return nil, nil
	}
	hs, err := anon.Select(a.handlers)
	if err != nil {
		return nil, err
	}
	if sopts.Timeline, err = session.BuildTimeline(f); err != nil {
		return nil, err
	}
	b, err := anonbind.New(f, sopts.Timeline, anonbind.Options{Handlers: hs, Force: a.force})
	if err != nil {
		return nil, err
	}
	sopts.Anon = b
	return b, nil
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }
