package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/anonbind"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/session"
	"github.com/jitprof/jitprof/perfdata"
)

// anonFlags are the JIT-code options of the commands that read a
// recording: --anon-samples, --anon-handler, --anon-handler-budget,
// --pypylog, --force and -v.
type anonFlags struct {
	samples  bool
	handlers multiFlag
	budget   time.Duration
	pypylog  string
	force    bool
	verbose  bool
}

func (a *anonFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&a.samples, "anon-samples", false, "include samples in anonymous executable memory (JIT code), named by the anon handlers where they can")
	fs.Var(&a.handlers, "anon-handler", "JIT data `handler`s to try, in order (repeatable or comma-separated; built in: jitlog, jitdump, pypy, perfmap; NAME runs jitprof-anon-NAME); implies --anon-samples")
	fs.StringVar(&a.pypylog, "pypylog", "", "PyPy's log `FILE` (as in PYPYLOG=jit-backend-addr,jit-log-opt:FILE; %d is the pid) naming the loops and bridges of PyPy processes; implies --anon-handler pypy")
	fs.DurationVar(&a.budget, "anon-handler-budget", anon.DefaultBudget, fmt.Sprintf("the most `time` external anon handlers may take in all; one that does not answer a request within %v is killed and not asked again", anon.DefaultTimeout))
	fs.BoolVar(&a.force, "force", false, "read a recording owned by neither you nor root (as perf -f), and JIT data files owned by another user than the process's, with several links, or over 1 GiB (never through a symlink; see docs/security.md)")
	for _, name := range []string{"v", "verbose"} {
		fs.BoolVar(&a.verbose, name, false, "say for every process without JIT data where each anon handler looked, and every ambiguous range; -v and --verbose are one")
	}
}

func (a *anonFlags) enabled() bool { return a.samples || len(a.handlers) > 0 || a.pypylog != "" }

// bind sets sopts up to bind the JIT handlers the flags ask for to f's
// processes once Load has read f's timeline (from a stream, in its one
// pass); *b is then the binder, and stays nil when the flags ask for no
// JIT names.
func (a *anonFlags) bind(f *perfdata.File, sopts *session.Options, b **anonbind.Binder) error {
	if !a.enabled() {
		return nil
	}
	hs, err := anon.ExternalOptions{Budget: a.budget}.Select(a.handlers)
	if err != nil {
		return err
	}
	if a.pypylog != "" {
		hs = anon.WithPyPyLog(hs, a.pypylog)
	}
	leafOnly := sopts.LeafOnly
	sopts.Bind = func(tl *session.Timeline) (session.AnonResolver, error) {
		nb, err := anonbind.New(f, tl, anonbind.Options{Handlers: hs, Force: a.force})
		if err != nil {
			return nil, err
		}
		if !f.Pipe {
			// A file can be read twice: ask external handlers about
			// every address ahead, in batches. A stream's samples go by
			// once, and are asked about one at a time.
			nb.Prepare(f, tl, leafOnly)
		}
		*b = nb
		return nb, nil
	}
	return nil
}

// load opens the recording input, binds the JIT handlers the flags ask
// for and loads its profile, telling on stderr, as jitprof cmd, which
// handler named each process's JIT code and what went wrong. The binder,
// closed by then, is nil when the flags ask for no JIT names; done
// releases the file.
func (a *anonFlags) load(cmd, input string, sopts session.Options) (p *profile.Profile, binder *anonbind.Binder, done func(), err error) {
	f, err := openRecording(input, a.force)
	if err != nil {
		return nil, nil, nil, err
	}
	done = func() { f.Close() }
	if err = a.bind(f, &sopts, &binder); err != nil {
		done()
		return nil, nil, nil, fmt.Errorf("%s: %w", input, err)
	}
	p, err = session.Load(f, sopts)
	if binder != nil {
		// Close before telling: closing is when an external handler's
		// failures while resolving come out. They are in the claims.
		binder.Close()
	}
	if err != nil {
		done()
		return nil, nil, nil, fmt.Errorf("%s: %w", input, err)
	}
	if binder != nil {
		reportClaims(os.Stderr, cmd, binder.Claims(), a.verbose)
	}
	for _, w := range f.Warnings() {
		fmt.Fprintf(os.Stderr, "jitprof %s: %s: warning: %s\n", cmd, input, w)
	}
	return p, binder, done, nil
}

// maxListed bounds the ambiguous ranges and pids listed per message
// without -v.
const maxListed = 3

// reportClaims says, per process with JIT samples, which handler named
// them from what data, what went wrong on the way, and where a timeless
// source could not tell re-generated code apart. Processes that merely
// have no JIT data, common in a system-wide recording, get one line in
// all unless verbose.
func reportClaims(w io.Writer, cmd string, claims []anonbind.Claim, verbose bool) {
	say := func(format string, args ...any) { fmt.Fprintf(w, "jitprof "+cmd+": "+format+"\n", args...) }
	var noData []anonbind.Claim
	notAsked := map[string][]uint32{} // "handler\x00why" -> pids
	var notAskedKeys []string
	for _, c := range claims {
		var shown []error // errors worth a line of their own
		for _, err := range c.Errs {
			var ce *anon.ClaimError
			switch {
			case errors.Is(err, anon.ErrNoData) && !verbose:
			case errors.Is(err, anon.ErrNotAsked) && errors.As(err, &ce) && !verbose:
				_, why, _ := strings.Cut(ce.Err.Error(), anon.ErrNotAsked.Error()+": ")
				k := ce.Handler + "\x00" + why
				if _, ok := notAsked[k]; !ok {
					notAskedKeys = append(notAskedKeys, k)
				}
				notAsked[k] = append(notAsked[k], c.PID)
			default:
				shown = append(shown, err)
			}
		}
		who := fmt.Sprintf("pid %d (%s)", c.PID, c.Comm)
		switch {
		case c.Handler != "" && c.ResolveErr != nil:
			say("%s: anon handler %s took its JIT code but failed while naming it (named %d of %d addresses; the rest stay in anon buckets): %v",
				who, c.Handler, c.Named, c.Asked, c.ResolveErr)
		case c.Handler != "":
			say("%s: JIT code named by %s from %s", who, c.Handler, c.Source)
		case len(shown) == 0 && !verbose:
			noData = append(noData, c)
		default:
			say("%s: no anon handler named its JIT code; its samples stay in anon buckets", who)
		}
		for _, err := range shown {
			fmt.Fprintf(w, "  %v\n", err)
		}
		for i, amb := range c.Ambiguous {
			if i == maxListed && !verbose {
				say("pid %d: and %d more ambiguous ranges (-v lists them)", c.PID, len(c.Ambiguous)-maxListed)
				break
			}
			say("pid %d: the %s data is ambiguous for %#x-%#x: %s all ran there and it has no times to tell them apart (a jitdump or jitlog can)",
				c.PID, c.Handler, amb.Start, amb.End, strings.Join(amb.Names, ", "))
		}
	}
	for _, k := range notAskedKeys {
		handler, why, _ := strings.Cut(k, "\x00")
		say("anon handler %s was not asked about %s: %s", handler, pidList(notAsked[k]), why)
	}
	switch {
	case len(noData) == 1:
		c := noData[0]
		say("pid %d (%s) has samples in anonymous memory but no JIT data an anon handler reads; they stay in anon buckets (-v says where each looked)", c.PID, c.Comm)
	case len(noData) > 1:
		pids := make([]uint32, len(noData))
		for i, c := range noData {
			pids[i] = c.PID
		}
		say("%d processes have samples in anonymous memory but no JIT data an anon handler reads (%s); they stay in anon buckets (-v lists them and where each handler looked)",
			len(noData), pidList(pids))
	}
}

// pidList is "pid 7" or "pids 7, 8, 9 and 4 more".
func pidList(pids []uint32) string {
	if len(pids) == 1 {
		return "pid " + strconv.FormatUint(uint64(pids[0]), 10)
	}
	var b strings.Builder
	b.WriteString("pids ")
	for i, pid := range pids {
		if i == maxListed && len(pids) > maxListed+1 {
			fmt.Fprintf(&b, " and %d more", len(pids)-maxListed)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatUint(uint64(pid), 10))
	}
	return b.String()
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }
