package web

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	pprof "github.com/google/pprof/profile"

	"github.com/jitprof/jitprof/internal/annotate"
	"github.com/jitprof/jitprof/internal/anonbind"
	"github.com/jitprof/jitprof/internal/diff"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/trust"
)

// Recording is what the server shows: a profile and what loading it
// learnt that the profile does not say.
type Recording struct {
	// Profile is the recording's profile. Loaded with source lines and
	// addresses (driver.LoadOptions Lines and Addresses) it also serves
	// the source and disassembly views.
	Profile *profile.Profile
	// Name says what was read, such as the perf.data file's path.
	Name string
	// Notes are lines for the header that only the loading knows, as
	// the text report's notes: JIT samples left out and the flag that
	// would include them, say.
	Notes []string
	// Claims say which anon handler named each process's JIT code (the
	// binder's, after it was closed); nil when JIT code was not named.
	Claims []anonbind.Claim
	// Close, when set, releases what the profile points into (the mapped
	// recording holds the JIT code's bytes); the server calls it once it
	// shows the recording no more.
	Close func()
	// Base, when set, is the profile pprof's views compare the
	// recording with, as pprof -diff_base (jitprof web --diff-base): the
	// base's samples of the selection's code and event, negated, JIT
	// code of both matched by name across runs (internal/diff) unless
	// ExactNames. The process and thread selection is the recording's:
	// the base is compared whole.
	Base       *profile.Profile
	ExactNames bool
	// Symbolizer and OpenSource, when set, read the images and source
	// files of this recording instead of Options' (an archive's files).
	Symbolizer *symbolize.Symbolizer
	OpenSource func(file string, as trust.Cred) (io.ReadCloser, error)
}

// Options configure a Server.
type Options struct {
	// Load loads the recording; New calls it, and a reload (the page's
	// button, POST /reload) calls it again.
	Load func(ctx context.Context) (*Recording, error)
	// Symbolizer opens ELF images for disassembly and source lines; nil
	// means symbolize.New with defaults.
	Symbolizer *symbolize.Symbolizer
	// OpenSource opens the source files the source views show; nil
	// means annotate.OpenSource, the machine's files.
	OpenSource func(file string, as trust.Cred) (io.ReadCloser, error)
	// Log receives pprof's error messages; nil discards them.
	Log io.Writer
}

// maxViews bounds the pprof drivers kept, one per selection viewed
// lately: each holds its selection's profile in pprof's form.
const maxViews = 8

// Server serves the views of one recording.
type Server struct {
	opts  Options
	dot   bool // Graphviz's dot is installed: pprof's graph view works
	mux   *http.ServeMux
	token string // what a request's path must begin with (guard)
	base  string // "/" + token: the path every address of the view is under

	reloading sync.Mutex // one load at a time
	mu        sync.Mutex // guards cur
	cur       *state
}

// state is one loaded recording and the views made of it.
type state struct {
	rec   *Recording
	users sync.WaitGroup // requests still using it
	marks []byte         // JSON: JIT function name -> what it is, for pprof's pages
	src   *sources       // the source files pprof's views read

	mu    sync.Mutex
	views map[Selection]*viewSlot
	lru   []Selection // least recently used first
	procs map[int][]process
}

type viewSlot struct {
	once     sync.Once
	handlers map[string]http.Handler
	err      error
}

//go:embed html static
var files embed.FS

// New loads the recording through opts.Load and returns a Server for it.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Symbolizer == nil {
		opts.Symbolizer = symbolize.New(symbolize.Options{})
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, mux: http.NewServeMux(), token: token, base: "/" + token}
	_, err = exec.LookPath("dot")
	s.dot = err == nil
	st, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	s.cur = st
	static, _ := fs.Sub(files, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, s.base+"/ui/"+all.String()+"/", http.StatusFound)
	})
	s.mux.HandleFunc("GET /ui/{sel}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, s.base+"/ui/"+url.PathEscape(r.PathValue("sel"))+"/", http.StatusMovedPermanently)
	})
	s.mux.HandleFunc("/ui/{sel}/{view...}", s.servePprof)
	s.mux.HandleFunc("GET /select", s.serveSelect)
	s.mux.HandleFunc("GET /recording", s.serveRecording)
	s.mux.HandleFunc("GET /generations", s.serveGenerations)
	s.mux.HandleFunc("POST /reload", s.serveReload)
	return s, nil
}

func (s *Server) load(ctx context.Context) (*state, error) {
	rec, err := s.opts.Load(ctx)
	if err != nil {
		return nil, err
	}
	p := rec.Profile
	if p == nil || len(p.Events) == 0 {
		if rec.Close != nil {
			rec.Close()
		}
		return nil, errors.New("the recording has no events")
	}
	marks := map[string]string{}
	for _, f := range p.Funcs {
		if im := &p.Images[f.Image]; isJIT(im) {
			marks[f.Name] = jitMark(&f, im)
		}
	}
	// A comparison names JIT code as matched across runs: one name
	// stands for every generation, of either profile.
	for _, q := range []*profile.Profile{p, rec.Base} {
		if rec.Base == nil {
			break
		}
		for _, f := range q.Funcs {
			if im := &q.Images[f.Image]; isJIT(im) {
				if n, r := diff.Normalize(f.Name); r != 0 && !rec.ExactNames {
					f.Gen = 0
					marks[n] = jitMark(&f, im) + " (matched across runs by " + r.String() + ")"
				}
			}
		}
	}
	b, err := json.Marshal(marks)
	if err == nil {
		var src *sources
		open := annotate.OpenSource
		for _, o := range []func(string, trust.Cred) (io.ReadCloser, error){s.opts.OpenSource, rec.OpenSource} {
			if o != nil {
				open = o
			}
		}
		if src, err = newSources(open); err == nil {
			return &state{rec: rec, marks: b, src: src, views: map[Selection]*viewSlot{}, procs: map[int][]process{}}, nil
		}
	}
	if rec.Close != nil {
		rec.Close()
	}
	return nil, err
}

// jitMark says what JIT function f is: its JIT data's handler and
// process (the image's name, such as "[JIT jitlog] minijit") and its
// generation.
func jitMark(f *profile.Func, im *profile.Image) string {
	if im.Name == f.Name { // an anon bucket: no handler named it
		return "JIT code no anon handler named"
	}
	m := "JIT code: " + im.Name
	if f.Gen != 0 {
		m += ", generation " + strconv.FormatUint(f.Gen, 10)
	}
	return m
}

// acquire returns the current state, which stays loaded until release.
func (s *Server) acquire() *state {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur.users.Add(1)
	return s.cur
}

func (st *state) release() { st.users.Done() }

// retire waits for st's last request, then releases its recording and
// removes its source files' snapshot.
func (st *state) retire() {
	st.users.Wait()
	if st.rec.Close != nil {
		st.rec.Close()
	}
	st.src.close()
}

// Close releases the recording once the requests using it are done;
// the Server must not be used afterwards.
func (s *Server) Close() {
	s.mu.Lock()
	st := s.cur
	s.mu.Unlock()
	st.retire()
}

// Reload loads the recording again; requests under way finish on the
// one they started with.
func (s *Server) Reload(ctx context.Context) error {
	s.reloading.Lock()
	defer s.reloading.Unlock()
	st, err := s.load(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	old := s.cur
	s.cur = st
	s.mu.Unlock()
	go old.retire()
	return nil
}

// view returns the pprof handlers of sel, starting a driver for it the
// first time and keeping the last maxViews.
func (st *state) view(sel Selection, opts *Options) (map[string]http.Handler, error) {
	st.mu.Lock()
	slot := st.views[sel]
	if slot == nil {
		slot = &viewSlot{}
		st.views[sel] = slot
		if len(st.lru) == maxViews {
			delete(st.views, st.lru[0])
			st.lru = st.lru[1:]
		}
	} else {
		st.lru = slices.DeleteFunc(st.lru, func(x Selection) bool { return x == sel })
	}
	st.lru = append(st.lru, sel)
	st.mu.Unlock()
	slot.once.Do(func() {
		var base *pprof.Profile
		if b := st.rec.Base; b != nil {
			ev := diff.EventOf(b, st.rec.Profile, sel.Event)
			if ev < 0 {
				slot.err = fmt.Errorf("the base has no %s event", st.rec.Profile.Events[sel.Event].Name)
				return
			}
			bsel := Selection{PID: -1, TID: -1, Code: sel.Code, Event: ev}
			if base, slot.err = diff.BasePprof(bsel.apply(b), ev, st.rec.ExactNames); slot.err != nil {
				return
			}
		}
		slot.handlers, slot.err = newPprofView(sel.apply(st.rec.Profile), sel.Event, base, st.rec.ExactNames, cmp.Or(st.rec.Symbolizer, opts.Symbolizer), st.src, opts.Log)
	})
	return slot.handlers, slot.err
}

// processes returns the recording's processes with samples of event.
func (st *state) processes(event int) []process {
	st.mu.Lock()
	defer st.mu.Unlock()
	l, ok := st.procs[event]
	if !ok {
		l = processes(st.rec.Profile, event)
		st.procs[event] = l
	}
	return l
}

// URL is the address to open the view at, served on addr: its path
// begins with the server's token, as every address of the view does.
func (s *Server) URL(addr net.Addr) string {
	return "http://" + addr.String() + s.base + "/"
}

// Handler returns the server's HTTP handler, served on addr. It answers
// only requests whose path begins with the server's token (guard), and
// on a loopback address only those for a loopback host name.
func (s *Server) Handler(addr net.Addr) http.Handler {
	g := &guard{next: s.mux, token: s.token}
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsLoopback() {
		g.hostIP = ta.IP
	}
	return g
}

// Serve serves on ln until ctx is done, then stops, lets requests under
// way finish and closes the recording.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(ln.Addr())}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	err := srv.Shutdown(context.Background())
	s.Close()
	return err
}

// view names are pprof's: a word, never a path.
var viewName = regexp.MustCompile(`^[a-z0-9]*$`)

// servePprof serves pprof's UI of a selection, /ui/SEL/VIEW, with
// jitprof's bar above it and its JIT code marked.
func (s *Server) servePprof(w http.ResponseWriter, r *http.Request) {
	st := s.acquire()
	defer st.release()
	sel, err := parseSelection(r.PathValue("sel"))
	if err == nil && sel.Event >= len(st.rec.Profile.Events) {
		err = fmt.Errorf("no event %d", sel.Event)
	}
	view := r.PathValue("view")
	if err != nil || !viewName.MatchString(view) {
		http.NotFound(w, r)
		return
	}
	if view == "graph" && !s.dot {
		s.render(w, st, "message", page{Sel: sel, Kind: "ui", View: view, Title: "Graph view",
			Message: "The graph view needs Graphviz's dot, which is not installed (Debian: apt-get install graphviz). The flame graph, top, peek, source and disassembly views work without it."})
		return
	}
	handlers, err := st.view(sel, &s.opts)
	if err != nil {
		s.render(w, st, "message", page{Sel: sel, Kind: "ui", View: view, Title: "No view", Message: err.Error()})
		return
	}
	h := handlers["/"+view]
	if h == nil {
		http.NotFound(w, r)
		return
	}
	buf := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
	h.ServeHTTP(buf, r)
	body := buf.body.Bytes()
	if buf.status == http.StatusOK && strings.HasPrefix(buf.header.Get("Content-Type"), "text/html") {
		var bar bytes.Buffer
		if err := templates().ExecuteTemplate(&bar, "bar", s.pageData(st, page{Sel: sel, Kind: "ui", View: view, Query: r.URL.RawQuery})); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		body = st.src.unname(decorate(body, bar.Bytes(), st.marks, s.base, !s.dot))
		buf.header.Del("Content-Length")
	}
	for k, v := range buf.header {
		w.Header()[k] = v
	}
	w.WriteHeader(buf.status)
	w.Write(body)
}

// stackViewerCall is where pprof's flame graph page calls its script.
var stackViewerCall = regexp.MustCompile(`(?m)^(\s*)stackViewer\(`)

// decorate adds jitprof's style sheet, script, bar and JIT marks to a
// page of pprof's, whose flame graph then draws through jitprof's script
// (static/jitprof.js); base is the path the view is served under.
func decorate(page, bar, marks []byte, base string, noGraph bool) []byte {
	head := fmt.Appendf(nil, `<link rel="stylesheet" href="%[2]s/static/jitprof.css"><script>var jitprofJIT = %[1]s;</script><script src="%[2]s/static/jitprof.js"></script>`, marks, base)
	if noGraph {
		head = append(head, `<style>#graphbtn{display:none}</style>`...)
	}
	page = insertAt(page, "</head>", head, false)
	page = insertAt(page, "<body>", bar, true)
	return stackViewerCall.ReplaceAll(page, []byte("${1}jitprofStackViewer("))
}

// insertAt inserts ins before the first tag, or after it; a page without
// the tag is left as it is.
func insertAt(page []byte, tag string, ins []byte, after bool) []byte {
	i := bytes.Index(page, []byte(tag))
	if i < 0 {
		return page
	}
	if after {
		i += len(tag)
	}
	return slices.Concat(page[:i], ins, page[i:])
}

// bufferedResponse holds a pprof page to decorate.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) WriteHeader(status int)      { b.status = status }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }

// serveSelect turns the bar's form into the chosen view's address.
func (s *Server) serveSelect(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sel, err := parseSelection(q.Get("who"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch q.Get("code") {
	case "jit":
		sel.Code = JITCode
	case "native":
		sel.Code = NativeCode
	}
	if ev, err := strconv.Atoi(q.Get("event")); err == nil && ev >= 0 {
		sel.Event = ev
	}
	var to string
	switch q.Get("page") {
	case "recording":
		to = "/recording?sel=" + url.QueryEscape(sel.String())
	case "generations":
		to = "/generations?sel=" + url.QueryEscape(sel.String()) + "&fn=" + url.QueryEscape(q.Get("fn"))
	default:
		view := q.Get("view")
		if !viewName.MatchString(view) {
			view = ""
		}
		to = "/ui/" + sel.String() + "/" + view
		if rq := q.Get("q"); rq != "" {
			to += "?" + rq
		}
	}
	http.Redirect(w, r, s.base+to, http.StatusFound)
}

func (s *Server) serveReload(w http.ResponseWriter, r *http.Request) {
	if err := s.Reload(r.Context()); err != nil {
		http.Error(w, "reload: "+err.Error(), http.StatusInternalServerError)
		return
	}
	// Back to the page the form was on, under the view's path only.
	to := r.FormValue("back")
	if !strings.HasPrefix(to, s.base+"/") {
		to = s.base + "/"
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// selection reads the sel parameter of one of jitprof's own pages.
func selection(r *http.Request, p *profile.Profile) (Selection, error) {
	v := r.URL.Query().Get("sel")
	if v == "" {
		return all, nil
	}
	sel, err := parseSelection(v)
	if err == nil && sel.Event >= len(p.Events) {
		err = fmt.Errorf("no event %d", sel.Event)
	}
	return sel, err
}
