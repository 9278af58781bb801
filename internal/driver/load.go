package driver

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/anonbind"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/report"
)

// Options say how to load a profile.
type Options struct {
	LoadOptions
	// JIT says how JIT code is named.
	JIT JITOptions
	// RequireCallchains makes samples without callchains an error
	// (report -g).
	RequireCallchains bool
	// Filter keeps only some samples, as perf report's filters do.
	Filter report.Filter
	// ExcludeJIT leaves the samples in JIT code out when JIT code is
	// not named (opreport's default), with a note saying so.
	ExcludeJIT bool
	// Command names the command in what is told the user ("report":
	// "jitprof report: ..."); Log is where that goes, nil for nowhere.
	Command string
	Log     io.Writer
}

// JITOptions are the options of the commands that read samples about
// JIT code: --anon-samples, --anon-handler, --anon-handler-budget,
// --pypylog, --force and -v.
type JITOptions struct {
	// Samples includes the samples in anonymous executable memory,
	// named where a handler can; without it they are left out.
	Samples bool
	// Handlers are the handlers to try, in order (anon.Select's names).
	Handlers []string
	// Budget bounds the time external handlers take in all.
	Budget time.Duration
	// PyPyLog is a PyPy log naming the loops and bridges of PyPy
	// processes.
	PyPyLog string
	// Force overrides the trust checks on JIT data files.
	Force bool
	// Verbose tells of every process without JIT data and every
	// ambiguous range.
	Verbose bool
}

// Enabled reports whether the options ask for JIT code to be named:
// --anon-handler and --pypylog imply --anon-samples.
func (o JITOptions) Enabled() bool { return o.Samples || len(o.Handlers) > 0 || o.PyPyLog != "" }

// Loaded is a loaded profile: what a report is made from, and what the
// web UI shows.
type Loaded struct {
	Profile *profile.Profile
	// Name says what was read.
	Name string
	// Notes are lines for a report's header that only the loading
	// knows: JIT samples left out, and the option that includes them.
	Notes []string
	// Claims say which handler named each process's JIT code; nil when
	// JIT code was not named.
	Claims []anonbind.Claim
	// Callchains says the samples had callchains, or the source
	// caller-callee arcs, before the filters.
	Callchains bool
	// LeftOut counts the JIT samples left out; Note is what Notes says
	// of them, "" when none were.
	LeftOut report.Excluded
	Note    string
	// Files says where the source's images and source files are read:
	// the machine's (zero), or an archive's.
	Files Files

	src Source
}

// Close releases the source, which the profile may point into (a
// mapped recording holds the JIT code's bytes).
func (l *Loaded) Close() error { return l.src.Close() }

// Load loads src's profile as opts say: binds the JIT handlers they
// ask for to src's processes, resolves the samples, applies the
// filters and, unless JIT code is named, leaves its samples out with a
// note. It tells opts.Log which handler named each process's JIT code
// and what src warned of. Load owns src: Loaded.Close, or a Load that
// fails, closes it.
func Load(ctx context.Context, src Source, opts Options) (*Loaded, error) {
	l, err := load(ctx, src, opts)
	if err != nil {
		src.Close()
		return nil, err
	}
	return l, nil
}

func load(ctx context.Context, src Source, opts Options) (*Loaded, error) {
	var files Files
	if fs, ok := src.(interface{ Files() Files }); ok {
		files = fs.Files()
		opts.Symbolizer = files.Symbolizer
	}
	var binder *anonbind.Binder
	var bind func(anonbind.Processes) *anonbind.Binder
	if opts.JIT.Enabled() {
		hs, err := anon.ExternalOptions{Budget: opts.JIT.Budget}.Select(opts.JIT.Handlers)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.Name(), err)
		}
		if opts.JIT.PyPyLog != "" {
			hs = anon.WithPyPyLog(hs, opts.JIT.PyPyLog)
		}
		bind = func(procs anonbind.Processes) *anonbind.Binder {
			binder = anonbind.New(procs, anonbind.Options{Handlers: hs, Force: opts.JIT.Force, Proc: files.Proc})
			return binder
		}
	}
	p, err := src.Load(ctx, opts.LoadOptions, bind)
	if binder != nil {
		// Close before telling: closing is when an external handler's
		// failures while resolving come out. They are in the claims.
		binder.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src.Name(), err)
	}
	l := &Loaded{Profile: p, Name: src.Name(), Callchains: report.HasCallchains(p) || p.Arcs != nil, Files: files, src: src}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	if binder != nil {
		l.Claims = binder.Claims()
		if l.Claims == nil {
			l.Claims = []anonbind.Claim{}
		}
		TellClaims(log, opts.Command, l.Claims, opts.JIT.Verbose)
	}
	for _, w := range src.Warnings() {
		fmt.Fprintf(log, "jitprof %s: %s: warning: %s\n", opts.Command, src.Name(), w)
	}
	if opts.RequireCallchains && !l.Callchains {
		return nil, fmt.Errorf("%s: -g: the recording has no callchains (record with -g)", src.Name())
	}
	if err := opts.Filter.Apply(p); err != nil {
		return nil, fmt.Errorf("%s: --cpu: %w", src.Name(), err)
	}
	if binder == nil && opts.ExcludeJIT {
		l.leaveOutJIT()
	}
	return l, nil
}

// leaveOutJIT drops the samples in JIT code, as opreport does without
// --anon-samples, and says so in a note.
func (l *Loaded) leaveOutJIT() {
	p := l.Profile
	ex := report.ExcludeAnon(p)
	l.LeftOut = ex
	if ex.Samples == 0 {
		return
	}
	l.Note = fmt.Sprintf("%d of %d samples (%.2f%% of the event) are in JIT code (anonymous executable memory) and left out, so percentages are of the rest: add --anon-samples to include and name them",
		ex.Samples, ex.Samples+p.Events[0].Count, 100*float64(ex.Period)/float64(max(ex.TotalPeriod, 1)))
	l.Notes = append(l.Notes, l.Note)
}
