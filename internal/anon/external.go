package anon

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/jitprof/jitprof/internal/tailbuf"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/codemap"
	"github.com/jitprof/jitprof/internal/jitname"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/trust"
)

// The external-handler protocol, specified in docs/anon-handlers.md.
const (
	// ExternalPrefix prefixes the executable of --anon-handler=NAME.
	ExternalPrefix = "jitprof-anon-"
	// MaxLine bounds a response line, newline included.
	MaxLine = 64 << 10
	// MaxBatch bounds the queries of one resolve request; longer batches
	// are split.
	MaxBatch = 4096
	// MaxAmbiguous bounds the names of one ambiguous response.
	MaxAmbiguous = 64
	// DefaultTimeout is ExternalOptions.Timeout when left zero.
	DefaultTimeout = 10 * time.Second
	// DefaultBudget is ExternalOptions.Budget when left zero.
	DefaultBudget = 30 * time.Second
)

// ExternalOptions bound the time external handlers may take.
type ExternalOptions struct {
	// Timeout bounds each exchange with one handler process (a claim, one
	// resolve batch, the quit); a handler that takes longer is killed and
	// is not asked again, about this process or any other.
	Timeout time.Duration
	// Budget bounds the time of every exchange with every external handler
	// of one Select together, from the first request to any of them: a
	// report waits for handlers at most this long, however many processes
	// it asks about.
	Budget time.Duration
}

// ErrProtocol is a response from an external handler that breaks the
// protocol.
var ErrProtocol = errors.New("anon handler protocol error")

// ErrNotAsked is the error of a request an external handler was not sent:
// it had timed out before, or the budget was spent.
var ErrNotAsked = errors.New("not asked")

var errExited = errors.New("exited before answering")

// budget is the time the external handlers of one Select share.
type budget struct {
	timeout, total time.Duration
	once           sync.Once
	deadline       time.Time
}

// limit returns how long the next exchange may take, 0 when the budget
// is spent, and whether the budget rather than the timeout limits it.
func (b *budget) limit() (time.Duration, bool) {
	b.once.Do(func() { b.deadline = time.Now().Add(b.total) })
	left := time.Until(b.deadline)
	if left < b.timeout {
		return max(left, 0), true
	}
	return b.timeout, false
}

// findExternal finds the executable of --anon-handler=name: name itself
// when it is a path, else jitprof-anon-NAME on PATH.
func findExternal(name string, b *budget) (Handler, error) {
	// A library (seed 001's libNAME.so) where no executable is found.
	lib, libErr := findLibrary(name)
	path := name
	if !strings.Contains(name, "/") {
		p, err := exec.LookPath(ExternalPrefix + name)
		if err != nil {
			if libErr == nil {
				return libraryHandler(name, lib, b)
			}
			return nil, fmt.Errorf("no executable %s%s on PATH, and no library lib%s%s.so or lib%s.so in %s: %w",
				ExternalPrefix, name, ExternalPrefix, name, name, strings.Join(LibraryDirs(), ", "), ErrUnknownHandler)
		}
		path = p
	} else if libErr == nil {
		return libraryHandler(name, lib, b)
	} else if fi, err := os.Stat(name); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("%s is not an executable file or a library (.so): %w", name, ErrUnknownHandler)
	}
	// Run through this descriptor: the file found is the file run, and
	// a handler run as the process's user (unprivileged.go) needs no
	// right to the directories on its path.
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &external{name: name, path: path, exe: os.NewFile(uintptr(fd), path), shown: path, budget: b}, nil
}

// IsExternal reports whether h runs as a process of its own, so that its
// resolvers answer best in batches (BatchResolver).
func IsExternal(h Handler) bool {
	_, ok := h.(*external)
	return ok
}

// external is a handler run as a child process, one per claimed process.
type external struct {
	name, path string
	// exe is the executable at path, open: it is run through this
	// descriptor, kept open for every process started, and closed with
	// jitprof.
	exe *os.File
	// args and files are the handler's arguments and descriptors from 3
	// on: a library's host gets the library.
	args  []string
	files []*os.File
	// shown names the handler in errors: the executable, or the library.
	shown  string
	budget *budget
	// run starts the handler as the user as says (when jitprof runs as
	// root) with data, descriptors after files; nil is startProcess.
	// Tests talk to a handler in the test process instead.
	run func(h *external, as trust.Cred, data []*os.File, stderr io.Writer) (peer, io.WriteCloser, io.Reader, error)

	// version is the protocol version the handler's claims were answered
	// in: 0 until one was, then 1 or 2. A handler of version 1 is not
	// given data it never reads.
	version atomic.Int32

	mu      sync.Mutex
	stopped error // why it is not asked again

	// Until the handler has answered a request of a kind (claim,
	// resolve) once, such requests go one at a time: a handler that hangs
	// then times out once and is not asked again, instead of timing out
	// for every process asked at the same time.
	gates map[string]*gate
}

type gate struct {
	mu       sync.Mutex
	answered atomic.Bool
}

func (h *external) Name() string { return h.name }

// pass waits, for a request of kind no instance of which was answered
// yet, until it may be sent, and returns what to call with whether it
// was answered.
func (h *external) pass(kind string) func(answered bool) {
	h.mu.Lock()
	if h.gates == nil {
		h.gates = map[string]*gate{}
	}
	g := h.gates[kind]
	if g == nil {
		g = &gate{}
		h.gates[kind] = g
	}
	h.mu.Unlock()
	if g.answered.Load() {
		return func(bool) {}
	}
	g.mu.Lock()
	return func(answered bool) {
		if answered {
			g.answered.Store(true)
		}
		g.mu.Unlock()
	}
}

// stop makes every later request to h fail with ErrNotAsked and why.
func (h *external) stop(why error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped == nil {
		h.stopped = why
	}
}

// notAsked says why h may not be sent a request now, or nil.
func (h *external) notAsked() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped != nil {
		return fmt.Errorf("%w: %w", ErrNotAsked, h.stopped)
	}
	if d, _ := h.budget.limit(); d <= 0 {
		return fmt.Errorf("%w: the %v all anon handlers may take is spent", ErrNotAsked, h.budget.total)
	}
	return nil
}

func (h *external) Claim(p *Process) (Resolver, error) {
	if err := h.notAsked(); err != nil {
		return nil, err
	}
	var data *handlerData
	if h.version.Load() != 1 {
		data = gatherData(p, 3+len(h.files), MaxData)
	}
	c, err := h.start(p.PID, handlerCred(p), data.passedFiles())
	// The handler has its own descriptors, or failed to start.
	data.closeFiles()
	if err != nil {
		return nil, err
	}
	// Version 1's claim, which a handler of version 2 answers with the
	// highest version it speaks: then the session is of the lower of
	// that and jitprof's, and the claim goes on with the details.
	req := fmt.Sprintf("claim %d %d %d %s %s\n", p.PID, p.NSPID, p.UID, escape(p.Root), escape(p.Comm))
	resp, err := c.exchange(req, 1)
	if err == nil {
		switch resp[0].kind {
		case "protocol":
			c.version = min(resp[0].version, ProtocolVersion)
			h.version.Store(int32(c.version))
			if resp, err = c.exchange(data.details(p, c.version), 1); err == nil && resp[0].kind == "protocol" {
				err = fmt.Errorf("%w: a second \"protocol\" answer", ErrProtocol)
			}
		case "yes", "no":
			h.version.CompareAndSwap(0, 1)
		}
	}
	if err != nil {
		err = fmt.Errorf("%s: claim: %w", h.shown, err)
	}
	if err == nil && resp[0].kind == "error" {
		err = fmt.Errorf("%s: claim: %s", h.shown, resp[0].msg)
	}
	if err == nil && resp[0].kind != "yes" && resp[0].kind != "no" {
		err = fmt.Errorf("%s: claim: %w: %q is no answer to a claim", h.shown, ErrProtocol, resp[0].kind)
	}
	if err != nil {
		c.abort()
		return nil, err
	}
	if resp[0].kind == "no" {
		if err := c.close(); err != nil {
			return nil, err
		}
		if c.version >= 2 {
			return nil, data.declined()
		}
		return nil, nil
	}
	src := resp[0].msg
	if src == "" {
		src = h.name
	}
	return &extResolver{c: c, source: src}, nil
}

// conn is the conversation with one running handler, asked about one
// process.
type conn struct {
	h       *external
	pid     int
	version int // the session's protocol version
	p       peer
	w       io.WriteCloser
	r       *bufio.Reader
	stderr  *tailbuf.Buffer
	killed  atomic.Bool
	done    bool
}

// peer is the other end of a conversation: a handler process.
type peer interface {
	// kill stops it at once, and what it started; reads from it then end.
	kill()
	// wait reaps it once its output has ended.
	wait() error
}

// child is a handler running as a child process.
type child struct{ cmd *exec.Cmd }

func (p child) kill()       { syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }
func (p child) wait() error { return p.cmd.Wait() }

// startProcess runs the handler at path with pipes to talk to it, as the
// user as says when jitprof runs as root (unprivileged.go); stderr gets
// what it writes there.
func startProcess(h *external, as trust.Cred, data []*os.File, stderr io.Writer) (peer, io.WriteCloser, io.Reader, error) {
	path := h.path
	// The executable follows the descriptors the handler is told of.
	extra := append(append(slices.Clip(h.files), data...), h.exe)
	cmd := exec.Command(linux.FDPath(2+len(extra)), h.args...)
	cmd.Args[0] = path
	cmd.ExtraFiles = extra
	// Its own process group, so that killing it also kills what it
	// started and nothing keeps its stdout open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	cmd.Stderr = stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := startAs(cmd, as); err != nil {
		return nil, nil, nil, fmt.Errorf("anon handler: %w", err)
	}
	return child{cmd}, w, r, nil
}

// start runs the handler to ask about pid, as the user as says, with
// data as descriptors after h.files.
func (h *external) start(pid int, as trust.Cred, data []*os.File) (*conn, error) {
	c := &conn{h: h, pid: pid, version: 1, stderr: tailbuf.New(4096)}
	run := h.run
	if run == nil {
		run = startProcess
	}
	p, w, r, err := run(h, as, data, c.stderr)
	if err != nil {
		return nil, err
	}
	c.p, c.w, c.r = p, w, bufio.NewReaderSize(r, MaxLine)
	return c, nil
}

func (c *conn) kill() {
	c.killed.Store(true)
	c.p.kill()
}

// abort kills the handler and reaps it; nothing more is asked of it.
func (c *conn) abort() error {
	if c.done {
		return nil
	}
	c.done = true
	c.kill()
	return c.p.wait()
}

// exchange sends req and reads n responses, killing the handler if that
// takes longer than the timeout or what is left of the budget. Its errors
// are for the caller to say whose and of what request.
func (c *conn) exchange(req string, n int) (_ []response, err error) {
	kind, _, _ := strings.Cut(req, " ")
	done := c.h.pass(kind)
	defer func() { done(err == nil) }()
	if err := c.h.notAsked(); err != nil {
		c.abort()
		return nil, err
	}
	limit, byBudget := c.h.budget.limit()
	timer := time.AfterFunc(limit, c.kill)
	defer timer.Stop()
	fail := func(err error) ([]response, error) {
		if c.killed.Load() && !errors.Is(err, ErrProtocol) {
			if byBudget {
				err = fmt.Errorf("no answer before the %v all anon handlers may take ran out, killed it", c.h.budget.total)
			} else {
				err = fmt.Errorf("no answer within %v, killed it", limit)
				c.h.stop(fmt.Errorf("it timed out on pid %d", c.pid))
			}
		}
		// Reaped, its stderr is all there to quote.
		if werr := c.abort(); errors.Is(err, errExited) {
			err = fmt.Errorf("%w (%v)", err, werr)
		}
		return nil, fmt.Errorf("%w%s", err, stderrContext(c.stderr))
	}
	// An answer already waiting answers nothing asked yet: the handler
	// wrote more lines than it was asked for.
	if extra := c.r.Buffered(); extra > 0 {
		verb, _, _ := strings.Cut(req, "\n")
		return fail(fmt.Errorf("%w: %d bytes of output before request %q, which nobody asked for", ErrProtocol, extra, verb))
	}
	if _, err := io.WriteString(c.w, req); err != nil {
		if errors.Is(err, syscall.EPIPE) {
			err = errExited
		}
		return fail(err)
	}
	out := make([]response, 0, n)
	for len(out) < n {
		line, err := c.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return fail(fmt.Errorf("%w: response line %d longer than %d bytes", ErrProtocol, len(out)+1, MaxLine))
		}
		if err == io.EOF {
			err = errExited
		}
		if err != nil {
			return fail(err)
		}
		resp, err := parseResponse(string(line[:len(line)-1]), c.version)
		if err != nil {
			return fail(fmt.Errorf("response line %d: %w", len(out)+1, err))
		}
		out = append(out, resp)
		if resp.kind == "error" {
			break // the handler gives up on the whole request
		}
	}
	return out, nil
}

// close asks the handler to quit and waits for it, killing it after the
// timeout. Output after the quit answers nothing and is a protocol error.
func (c *conn) close() error {
	if c.done {
		return nil
	}
	if c.h.notAsked() != nil {
		// Already reported; it answered all it was asked, or failed.
		c.abort()
		return nil
	}
	c.done = true
	limit, _ := c.h.budget.limit()
	timer := time.AfterFunc(limit, c.kill)
	defer timer.Stop()
	io.WriteString(c.w, "quit\n")
	c.w.Close()
	extra, _ := io.CopyN(io.Discard, c.r, MaxLine)
	if extra > 0 {
		c.kill() // a handler that floods would keep us until the timer
	}
	err := c.p.wait()
	switch {
	case extra > 0:
		return fmt.Errorf("%s: %w: %d bytes of output after the last answer, which nobody asked for%s", c.h.shown, ErrProtocol, extra, stderrContext(c.stderr))
	case c.killed.Load():
		c.h.stop(fmt.Errorf("it did not quit on pid %d", c.pid))
		return fmt.Errorf("%s: did not exit within %v of quit, killed it%s", c.h.shown, limit, stderrContext(c.stderr))
	case err != nil:
		return fmt.Errorf("%s: %w%s", c.h.shown, err, stderrContext(c.stderr))
	}
	return nil
}

// extResolver is an external handler's resolver: one handler process,
// asked in batches. It is safe for concurrent use; requests take turns.
type extResolver struct {
	mu     sync.Mutex
	c      *conn
	source string
	err    error // the first failure; later calls resolve nothing
}

func (r *extResolver) Source() string { return r.source }

func (r *extResolver) Resolve(addr, t uint64) (Symbol, bool) {
	s := r.ResolveBatch([]Query{{addr, t}})[0]
	return s, s.Found()
}

func (r *extResolver) ResolveBatch(qs []Query) []Symbol {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Symbol, len(qs))
	var req strings.Builder
	for lo := 0; lo < len(qs) && r.err == nil; lo += MaxBatch {
		batch := qs[lo:min(lo+MaxBatch, len(qs))]
		req.Reset()
		fmt.Fprintf(&req, "resolve %d\n", len(batch))
		for _, q := range batch {
			fmt.Fprintf(&req, "%x %d\n", q.Addr, q.Time)
		}
		resp, err := r.c.exchange(req.String(), len(batch))
		if err != nil {
			r.err = fmt.Errorf("%s: resolve: %w", r.c.h.shown, err)
			break
		}
		if err := r.accept(batch, resp, out[lo:lo+len(batch)]); err != nil {
			r.err = err
			// The stream is out of step, or the handler gave up.
			r.c.abort()
		}
	}
	return out
}

// accept checks each response against its query and stores the answers
// in out. After a response that breaks the protocol nothing in the batch
// can be trusted, so none of it is kept; after an error response, the
// answers before it are.
func (r *extResolver) accept(batch []Query, resp []response, out []Symbol) error {
	for i, rs := range resp {
		switch rs.kind {
		case "none":
		case "ok":
			if a := batch[i].Addr; a < rs.sym.Start || a-rs.sym.Start >= rs.sym.Size {
				clear(out)
				return fmt.Errorf("%s: resolve: %w: answer %d of %d is %#x-%#x, which does not hold the address asked, %#x",
					r.c.h.shown, ErrProtocol, i+1, len(batch), rs.sym.Start, rs.sym.Start+rs.sym.Size, a)
			}
			out[i] = rs.sym
		case "error":
			return fmt.Errorf("%s: resolve: %s", r.c.h.shown, rs.msg)
		default:
			clear(out)
			return fmt.Errorf("%s: resolve: %w: answer %d of %d, %q, is no answer to a lookup", r.c.h.shown, ErrProtocol, i+1, len(batch), rs.kind)
		}
	}
	return nil
}

func (r *extResolver) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.c.close()
	if r.err != nil {
		return r.err
	}
	return err
}

// response is one parsed response line.
type response struct {
	kind    string // yes, no, protocol, ok (also for ambiguous and src), none, error
	msg     string // yes: the source; error: the message
	sym     Symbol // ok
	version int    // protocol
}

// parseResponse parses one response line, without its newline, of a
// session of the given protocol version: src answers exist from version 2.
func parseResponse(line string, version int) (response, error) {
	verb, rest, _ := strings.Cut(line, " ")
	bad := func(format string, a ...any) (response, error) {
		return response{}, fmt.Errorf("%w: "+format, append([]any{ErrProtocol}, a...)...)
	}
	switch verb {
	case "no", "none":
		if rest != "" || strings.Contains(line, " ") {
			return bad("%q takes no arguments", verb)
		}
		return response{kind: verb}, nil
	case "yes", "error":
		return response{kind: verb, msg: printable(rest)}, nil
	case "protocol":
		v, err := strconv.ParseUint(rest, 10, 31)
		if err != nil || v < 2 {
			return bad("%q is no protocol version, which is 2 or more", truncate(rest, 80))
		}
		return response{kind: verb, version: int(v)}, nil
	case "ok", "ambiguous", "src":
		if verb == "src" && version < 2 {
			return bad("%q answers only in a session of protocol version 2", verb)
		}
		// The fields before the name (which may hold spaces), the
		// name's included.
		n := map[string]int{"ok": 4, "ambiguous": 3, "src": 6}[verb]
		f := strings.SplitN(rest, " ", n)
		if len(f) < n {
			return bad("%q needs more fields: %q", verb, truncate(line, 80))
		}
		start, err1 := strconv.ParseUint(f[0], 16, 64)
		size, err2 := strconv.ParseUint(f[1], 16, 64)
		if err := errors.Join(err1, err2); err != nil {
			return bad("bad range in %q: %v", truncate(line, 80), err)
		}
		if size == 0 || start+size < start {
			return bad("empty or wrapping range in %q", truncate(line, 80))
		}
		if size > codemap.MaxCodeSize {
			return bad("range of %#x bytes, larger than any code can be (%d GiB), in %q", size, codemap.MaxCodeSize>>30, truncate(line, 80))
		}
		s := Symbol{Start: start, Size: size}
		if verb == "ambiguous" {
			s.Ambiguous = strings.Split(f[2], "\t")
			if len(s.Ambiguous) < 2 || len(s.Ambiguous) > MaxAmbiguous {
				return bad("ambiguous needs 2 to %d names, got %d", MaxAmbiguous, len(s.Ambiguous))
			}
			if slices.Contains(s.Ambiguous, "") {
				return bad("empty name in %q", truncate(line, 80))
			}
			for i, n := range s.Ambiguous {
				s.Ambiguous[i] = jitname.CapString(n)
			}
			return response{kind: "ok", sym: s}, nil
		}
		gen, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return bad("bad generation in %q: %v", truncate(line, 80), err)
		}
		if verb == "src" {
			file, err := unescape(f[3])
			if err != nil || file == "" {
				return bad("bad source file %q in %q", truncate(f[3], 80), truncate(line, 80))
			}
			l, err := strconv.ParseUint(f[4], 10, 31)
			if err != nil {
				return bad("bad source line in %q: %v", truncate(line, 80), err)
			}
			// Shown in reports: no terminal escapes.
			s.File, s.Line = printable(file), int(l)
		}
		name := f[n-1]
		if name == "" {
			return bad("empty name in %q", truncate(line, 80))
		}
		s.Gen, s.Name = gen, jitname.CapString(name)
		return response{kind: "ok", sym: s}, nil
	}
	return bad("unknown response %q", truncate(line, 80))
}

// printable is a handler's free text as jitprof shows it: control bytes
// (a terminal's escape sequences) become '?', and at most 1 KiB is kept.
//
// It is idempotent, which the fuzz test checks: bytes that are not UTF-8
// become U+FFFD (three bytes each) before the cut, and the cut falls on a
// rune boundary with room for its "...", so a second pass changes nothing.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
	const max = 1024
	if len(s) <= max {
		return s
	}
	cut := max - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// escape makes s one protocol field: "-" when empty, else s with '%',
// spaces and control bytes percent-encoded (and a literal "-" as %2D).
func escape(s string) string {
	if s == "" {
		return "-"
	}
	if s == "-" {
		return "%2D"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == '%' || c == 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// stderrContext quotes the end of a handler's stderr, for an error.
func stderrContext(t *tailbuf.Buffer) string {
	s := strings.TrimSpace(t.String())
	if s == "" {
		return ""
	}
	return "; its stderr: " + s
}
