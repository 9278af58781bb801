package web

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/driver"
	pprof "github.com/google/pprof/profile"

	"github.com/jitprof/jitprof/internal/diff"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/report"
	"github.com/jitprof/jitprof/internal/symbolize"
)

// pprofMu serializes the start of pprof drivers: pprof keeps the state a
// driver starts with (its configuration, interactive mode) in package
// variables, which one driver at a time may set.
var pprofMu sync.Mutex

// newPprofView starts pprof's web UI on p's samples of event, with
// jitprof's object tool, and returns its handlers (path -> handler, to
// mount under a prefix: its links are relative). One driver serves one
// profile, so each selection has its own. The source files pprof reads
// are src's copies (sources.go), never the files the profile names. With
// a base (diff.BasePprof), the view compares p with it as pprof
// -diff_base does, p's JIT code named as the base's (diff.Normalized)
// unless exact.
func newPprofView(p *profile.Profile, event int, base *pprof.Profile, exact bool, sym *symbolize.Symbolizer, src *sources, log io.Writer) (map[string]http.Handler, error) {
	if base != nil {
		p = diff.Normalized(p, exact)
	}
	pp, err := report.Pprof(p, event)
	if err != nil {
		return nil, err
	}
	obj := newObjTool(p, relocate(p, pp), sym, src)
	// Only the functions of the selection's samples are copied (and their
	// images opened for their owner); pprof shows no other, and reads
	// nothing of them once their file names are gone.
	sampled := map[*pprof.Function]bool{}
	for _, sm := range pp.Sample {
		for _, loc := range sm.Location {
			for _, ln := range loc.Line {
				sampled[ln.Function] = true
			}
		}
	}
	for _, fn := range pp.Function {
		if !sampled[fn] {
			fn.Filename = ""
			continue
		}
		// The export numbers functions from 1 in p.Funcs' order.
		fn.Filename = obj.source(fn.Filename, p.Funcs[fn.ID-1].Image)
	}
	if base != nil {
		if pp, err = diff.MergeBase(pp, base); err != nil {
			return nil, err
		}
	}
	var handlers map[string]http.Handler
	pprofMu.Lock()
	defer pprofMu.Unlock()
	err = driver.PProf(&driver.Options{
		Writer: noFiles{},
		// A port pprof does not open: the server is jitprof's.
		Flagset: &flagSet{http: "localhost:1", source: "jitprof", strings: map[string]string{
			"source_path": src.dir, "trim_path": sourceTrimPath}},
		Fetch: fetcher{pp},
		Sym:   symbolized{},
		Obj:   obj,
		UI:    &ui{log: log},
		HTTPServer: func(args *driver.HTTPServerArgs) error {
			handlers = args.Handlers
			return nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("pprof: %w", err)
	}
	if handlers == nil {
		return nil, errors.New("pprof: the driver started no web interface")
	}
	return handlers, nil
}

// fetcher gives pprof the profile jitprof built. It names no source, so
// pprof saves no copy of it.
type fetcher struct{ p *pprof.Profile }

func (f fetcher) Fetch(string, time.Duration, time.Duration) (*pprof.Profile, string, error) {
	return f.p, "", nil
}

// symbolized is pprof's Symbolizer for a profile jitprof symbolized
// already, JIT code included: pprof's own would look the files up again
// and knows no JIT code.
type symbolized struct{}

func (symbolized) Symbolize(string, driver.MappingSources, *pprof.Profile) error { return nil }

// noFiles refuses the files pprof's command line would write; the web
// UI writes none.
type noFiles struct{}

func (noFiles) Open(name string) (io.WriteCloser, error) {
	return nil, fmt.Errorf("%s: jitprof web writes no files", name)
}

// flagSet answers pprof's flags with their defaults but -http, which
// starts its web UI, and those in strings; it gives the one source, the
// fetcher's profile.
type flagSet struct {
	http, source string
	strings      map[string]string
}

func (f *flagSet) Bool(_ string, def bool, _ string) *bool          { return &def }
func (f *flagSet) Int(_ string, def int, _ string) *int             { return &def }
func (f *flagSet) Float64(_ string, def float64, _ string) *float64 { return &def }
func (f *flagSet) StringList(string, string, string) *[]*string     { return &[]*string{} }
func (f *flagSet) ExtraUsage() string                               { return "" }
func (f *flagSet) AddExtraUsage(string)                             {}
func (f *flagSet) Parse(func()) []string                            { return []string{f.source} }

func (f *flagSet) String(name, def, _ string) *string {
	if name == "http" {
		return &f.http
	}
	if v, ok := f.strings[name]; ok {
		return &v
	}
	return &def
}

// ui takes pprof's messages: errors go to log, the rest (such as the
// address it believes it serves on) nowhere. It never reads input and
// never opens a browser.
type ui struct {
	mu  sync.Mutex
	log io.Writer
}

func (u *ui) ReadLine(string) (string, error)     { return "", io.EOF }
func (u *ui) Print(...any)                        {}
func (u *ui) IsTerminal() bool                    { return false }
func (u *ui) WantBrowser() bool                   { return false }
func (u *ui) SetAutoComplete(func(string) string) {}

func (u *ui) PrintErr(args ...any) {
	if u.log == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	fmt.Fprintf(u.log, "jitprof web: pprof: %s\n", strings.TrimSuffix(fmt.Sprint(args...), "\n"))
}
