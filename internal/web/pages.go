package web

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jitprof/jitprof/internal/annotate"
	"github.com/jitprof/jitprof/internal/anonbind"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/report"
)

// page is what a page of jitprof's own, and the bar on every page, show.
type page struct {
	Sel   Selection
	Kind  string // "ui" (pprof's views), "recording", "generations"
	View  string // pprof's view, for "ui"
	Query string // pprof's parameters, for "ui"
	Fn    string // the JIT function, for "generations"
	Title string

	// Filled by pageData.
	Base    string // the path the view is served under: links begin with it
	Name    string
	Procs   []process
	Events  []profile.Event
	Notes   []string
	NoGraph bool

	Message    string
	Header     *header
	Claims     []anonbind.Claim
	Functions  []jitFunction
	Function   *jitFunction
	Axis       [2]string // the timeline's ends
	Generation []generation
}

var (
	tmplOnce sync.Once
	tmpl     *template.Template
)

func templates() *template.Template {
	tmplOnce.Do(func() {
		tmpl = template.Must(template.New("").Funcs(template.FuncMap{
			"pct":      func(v, total uint64) string { return fmt.Sprintf("%.1f%%", 100*float64(v)/float64(max(total, 1))) },
			"hex":      func(v uint64) string { return fmt.Sprintf("%#x", v) },
			"sel":      func(s Selection) string { return s.String() },
			"withCode": func(s Selection, c Code) Selection { s.Code = c; return s },
			"proc": func(s Selection, pid uint32) Selection {
				s.PID, s.TID = int64(pid), -1
				return s
			},
			"thread": func(s Selection, pid, tid uint32) Selection {
				s.PID, s.TID = int64(pid), int64(tid)
				return s
			},
			"quote": regexp.QuoteMeta,
		}).ParseFS(files, "html/*.html"))
	})
	return tmpl
}

// pageData fills what every page shows about the recording.
func (s *Server) pageData(st *state, pg page) page {
	p := st.rec.Profile
	pg.Base = s.base
	pg.Name = st.rec.Name
	pg.Procs = st.processes(pg.Sel.Event)
	pg.Events = p.Events
	pg.Notes = st.rec.Notes
	pg.NoGraph = !s.dot
	return pg
}

func (s *Server) render(w http.ResponseWriter, st *state, name string, pg page) {
	var buf bytes.Buffer
	if err := templates().ExecuteTemplate(&buf, name, s.pageData(st, pg)); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

// header is the recording's header, as the text report's.
type header struct {
	Events  []event
	Lost    uint64
	Span    string
	Command string
	Host    string
	Notes   []string
	Hints   []string
}

type event struct {
	profile.Event
	Rate string
}

func makeHeader(rec *Recording) *header {
	p := rec.Profile
	h := &header{Lost: p.Lost, Command: strings.Join(p.Cmdline, " "), Host: p.Hostname, Hints: report.Hints(p)}
	for _, e := range p.Events {
		rate := fmt.Sprintf("period %d", e.Period)
		if e.Freq != 0 {
			rate = fmt.Sprintf("frequency %d Hz", e.Freq)
		}
		h.Events = append(h.Events, event{e, rate})
	}
	if p.EndNS > p.StartNS {
		h.Span = fmt.Sprintf("%v (%.6f to %.6f)", time.Duration(p.EndNS-p.StartNS).Round(time.Microsecond), float64(p.StartNS)/1e9, float64(p.EndNS)/1e9)
	}
	for _, im := range p.Images {
		if im.NoSymbols != "" {
			h.Notes = append(h.Notes, fmt.Sprintf("no symbols for %s: %s", im.Name, im.NoSymbols))
		}
		if im.Stripped != "" {
			h.Notes = append(h.Notes, fmt.Sprintf("%s has %s", im.Name, im.Stripped))
		}
	}
	if p.SamplesNoMapping > 0 {
		h.Notes = append(h.Notes, fmt.Sprintf("%d samples were in no mapping", p.SamplesNoMapping))
	}
	h.Notes = append(h.Notes, rec.Notes...)
	return h
}

func (s *Server) serveRecording(w http.ResponseWriter, r *http.Request) {
	st := s.acquire()
	defer st.release()
	sel, err := selection(r, st.rec.Profile)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.render(w, st, "recording", page{Sel: sel, Kind: "recording", Title: "Recording",
		Header: makeHeader(st.rec), Claims: st.rec.Claims})
}

// jitFunction is a JIT function: the code its JIT generated under one
// name in one JIT image, over its generations.
type jitFunction struct {
	Name, Image string
	Gens        int
	Self, Total uint64 // samples of the selection
}

// generation is one piece of code of a JIT function.
type generation struct {
	Func        *profile.Func
	Self, Total uint64
	Load, End   string  // seconds from the recording's first sample
	X, W        float64 // its bar on the timeline, per cent of the span
	Listing     string  // annotated disassembly, or why there is none
}

// baseName is a JIT function's name without its generation.
func baseName(f *profile.Func) string {
	if f.Gen == 0 {
		return f.Name
	}
	return strings.TrimSuffix(f.Name, fmt.Sprintf(" [gen %d]", f.Gen))
}

func (s *Server) serveGenerations(w http.ResponseWriter, r *http.Request) {
	st := s.acquire()
	defer st.release()
	full := st.rec.Profile
	sel, err := selection(r, full)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p := sel.apply(full)
	self, total := funcSamples(p, sel.Event)
	type key struct {
		name  string
		image int32
	}
	groups := map[key][]int32{}
	for i := range p.Funcs {
		f := &p.Funcs[i]
		if im := &p.Images[f.Image]; isJIT(im) && im.Name != f.Name && total[i] > 0 {
			k := key{baseName(f), f.Image}
			groups[k] = append(groups[k], int32(i))
		}
	}
	pg := page{Sel: sel, Kind: "generations", Fn: r.URL.Query().Get("fn"), Title: "JIT generations"}
	var chosen []int32
	for k, fs := range groups {
		jf := jitFunction{Name: k.name, Image: p.Images[k.image].Name, Gens: len(fs)}
		for _, fi := range fs {
			jf.Self += self[fi]
			jf.Total += total[fi]
		}
		pg.Functions = append(pg.Functions, jf)
		if k.name == pg.Fn && (chosen == nil || jf.Total > pg.Function.Total) {
			pg.Function, chosen = &jf, fs
		}
	}
	slices.SortFunc(pg.Functions, func(a, b jitFunction) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Image, b.Image))
	})
	if pg.Function != nil {
		pg.Axis, pg.Generation = generations(p, chosen, self, total)
	}
	s.render(w, st, "generations", pg)
}

// funcSamples returns the samples of event per function: in its own
// code (self) and with it anywhere on the stack (total).
func funcSamples(p *profile.Profile, event int) (self, total []uint64) {
	self, total = make([]uint64, len(p.Funcs)), make([]uint64, len(p.Funcs))
	seen := make([]int, len(p.Funcs)) // entry index+1 that last counted it
	var stack []int32
	for i, e := range p.Entries {
		if int(e.Event) != event || e.Stack < 0 {
			continue
		}
		stack = p.Stack(stack[:0], e.Stack)
		self[p.Frames[stack[0]].Func] += e.Count
		for _, fr := range stack {
			if f := p.Frames[fr].Func; seen[f] != i+1 {
				seen[f] = i + 1
				total[f] += e.Count
			}
		}
	}
	return self, total
}

// generations lays out the pieces of code fs of one JIT function in
// the order their JIT made them, with their lifetimes on a timeline of
// the recording and their annotated disassembly.
func generations(p *profile.Profile, fs []int32, self, total []uint64) ([2]string, []generation) {
	slices.SortFunc(fs, func(a, b int32) int {
		fa, fb := &p.Funcs[a], &p.Funcs[b]
		return cmp.Or(cmp.Compare(fa.Load, fb.Load), cmp.Compare(fa.Gen, fb.Gen), cmp.Compare(fa.Addr, fb.Addr))
	})
	lo, hi := p.StartNS, p.EndNS
	for _, fi := range fs {
		f := &p.Funcs[fi]
		if f.Load != 0 {
			lo = min(lo, f.Load)
			hi = max(hi, f.Load, f.Unload)
		}
	}
	secs := func(t uint64) string { return fmt.Sprintf("%.3f s", (float64(t)-float64(p.StartNS))/1e9) }
	axis := [2]string{secs(lo), secs(hi)}
	at := func(t uint64) float64 { return 100 * float64(t-lo) / float64(max(hi-lo, 1)) }
	var out []generation
	for _, fi := range fs {
		f := &p.Funcs[fi]
		g := generation{Func: f, Self: self[fi], Total: total[fi], Load: "—", End: "—"}
		if f.Load != 0 {
			end := f.Unload
			g.Load, g.End = secs(f.Load), "still there at the end"
			if end == 0 {
				end = hi
			} else {
				g.End = secs(end)
			}
			g.X, g.W = at(f.Load), max(at(end)-at(f.Load), 0.3)
		}
		g.Listing = listing(p, f)
		out = append(out, g)
	}
	return axis, out
}

// listing is JIT code f disassembled, with its samples per instruction
// when it has some of its own.
func listing(p *profile.Profile, f *profile.Func) string {
	if len(f.Code) == 0 {
		return "Its JIT logged no code bytes (jitlog and jitdump log them; perf maps do not)."
	}
	var buf bytes.Buffer
	if err := annotate.Write(&buf, p, annotate.Options{Symbol: f.Name}); err == nil {
		// Without annotate's title, which the page says: its columns
		// would be as wide as the title.
		out := buf.String()
		if _, rest, ok := strings.Cut(out, "-\n"); ok {
			out = " Percent |\n" + rest
		}
		return out
	}
	buf.Reset()
	fmt.Fprintf(&buf, "No samples in its own code.\n         :\t%016x <%s>:\n", f.Addr, f.Name)
	for _, in := range annotate.Disassemble(f.Code, f.Addr, annotate.ATT, annotate.JITSymbols(f)) {
		fmt.Fprintf(&buf, "         :\t%8x:\t%s\n", in.PC, in.Text)
	}
	return buf.String()
}
