package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/anonbind"
	"github.com/jitprof/jitprof/internal/profile"
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

// bind sets sopts up to bind the JIT handlers the flags ask for to f's
// processes once Load has read f's timeline (from a stream, in its one
// pass); *b is then the binder, and stays nil when the flags ask for no
// JIT names.
func (a *anonFlags) bind(f *perfdata.File, sopts *session.Options, b **anonbind.Binder) error {
	if !a.enabled() {
		return nil
	}
	hs, err := anon.Select(a.handlers)
	if err != nil {
		return err
	}
	sopts.Bind = func(tl *session.Timeline) (session.AnonResolver, error) {
		nb, err := anonbind.New(f, tl, anonbind.Options{Handlers: hs, Force: a.force})
		if err != nil {
			return nil, err
		}
		*b = nb
		return nb, nil
	}
	return nil
}

// load opens the recording input, binds the JIT handlers the flags ask
// for and loads its profile, telling on stderr, as jitprof cmd, which
// handler named each process's JIT code and what was wrong with the
// file. The binder is nil when the flags ask for no JIT names; done
// releases the file and the handlers.
func (a *anonFlags) load(cmd, input string, sopts session.Options) (p *profile.Profile, binder *anonbind.Binder, done func(), err error) {
	f, err := perfdata.Open(input)
	if err != nil {
		return nil, nil, nil, err
	}
	done = func() {
		if binder != nil {
			binder.Close()
		}
		f.Close()
	}
	if err = a.bind(f, &sopts, &binder); err != nil {
		done()
		return nil, nil, nil, fmt.Errorf("%s: %w", input, err)
	}
	if p, err = session.Load(f, sopts); err != nil {
		done()
		return nil, nil, nil, fmt.Errorf("%s: %w", input, err)
	}
	if binder != nil {
		reportClaims(os.Stderr, cmd, binder.Claims())
	}
	for _, w := range f.Warnings() {
		fmt.Fprintf(os.Stderr, "jitprof %s: %s: warning: %s\n", cmd, input, w)
	}
	return p, binder, done, nil
}

// reportClaims says, per process with JIT samples, which handler named
// them from what data, or why none could; and where a timeless source
// could not tell re-generated code apart.
func reportClaims(w io.Writer, cmd string, claims []anonbind.Claim) {
	for _, c := range claims {
		if c.Handler != "" {
			fmt.Fprintf(w, "jitprof %s: pid %d (%s): JIT code named by %s from %s\n", cmd, c.PID, c.Comm, c.Handler, c.Source)
		} else {
			fmt.Fprintf(w, "jitprof %s: pid %d (%s): no anon handler understood its JIT data; its samples stay in anon buckets\n", cmd, c.PID, c.Comm)
			for _, err := range c.Errs {
				fmt.Fprintf(w, "  %v\n", err)
			}
		}
		for _, a := range c.Ambiguous {
			fmt.Fprintf(w, "jitprof %s: pid %d: the %s data is ambiguous for %#x-%#x: %s all ran there and it has no times to tell them apart (a jitdump or jitlog can)\n",
				cmd, c.PID, c.Handler, a.Start, a.End, strings.Join(a.Names, ", "))
		}
	}
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }
