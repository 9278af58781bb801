package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/driver"
)

// AnonFlags are the JIT-code options of the commands that read a
// recording: --anon-samples, --anon-handler, --anon-handler-budget,
// --pypylog, --force and -v.
type AnonFlags struct {
	samples  bool
	handlers multiFlag
	budget   time.Duration
	pypylog  string
	Force    bool
	verbose  bool
}

// Register defines the JIT-code flags on fs.
func (a *AnonFlags) Register(fs *flag.FlagSet) {
	fs.BoolVar(&a.samples, "anon-samples", false, "include samples in anonymous executable memory (JIT code), named by the anon handlers where they can")
	fs.Var(&a.handlers, "anon-handler", "JIT data `handler`s to try, in order (repeatable or comma-separated; built in: jitlog, jitdump, pypy, perfmap; NAME runs jitprof-anon-NAME); implies --anon-samples")
	fs.StringVar(&a.pypylog, "pypylog", "", "PyPy's log `FILE` (as in PYPYLOG=jit-backend-addr,jit-log-opt:FILE; %d is the pid) naming the loops and bridges of PyPy processes; implies --anon-handler pypy")
	fs.DurationVar(&a.budget, "anon-handler-budget", anon.DefaultBudget, fmt.Sprintf("the most `time` external anon handlers may take in all; one that does not answer a request within %v is killed and not asked again", anon.DefaultTimeout))
	fs.BoolVar(&a.Force, "force", false, "read a recording owned by neither you nor root (as perf -f), and JIT data files owned by another user than the process's, with several links, or over 1 GiB (never through a symlink; see docs/security.md)")
	for _, name := range []string{"v", "verbose"} {
		fs.BoolVar(&a.verbose, name, false, "say for every process without JIT data where each anon handler looked, and every ambiguous range; -v and --verbose are one")
	}
}

// options are the flags as the driver takes them.
func (a *AnonFlags) Options() driver.JITOptions {
	return driver.JITOptions{Samples: a.samples, Handlers: a.handlers, Budget: a.budget, PyPyLog: a.pypylog, Force: a.Force, Verbose: a.verbose}
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }
