package anon

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
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
)

// ExternalTimeout bounds each exchange with an external handler (a claim,
// one resolve batch, the quit): a handler that takes longer is killed.
var ExternalTimeout = 10 * time.Second

// ErrProtocol is a response from an external handler that breaks the
// protocol.
var ErrProtocol = errors.New("anon handler protocol error")

var errExited = errors.New("exited before answering")

// findExternal finds the executable of --anon-handler=name: name itself
// when it is a path, else jitprof-anon-NAME on PATH.
func findExternal(name string) (Handler, error) {
	path := name
	if !strings.Contains(name, "/") {
		p, err := exec.LookPath(ExternalPrefix + name)
		if err != nil {
			return nil, fmt.Errorf("no executable %s%s on PATH: %w", ExternalPrefix, name, ErrUnknownHandler)
		}
		path = p
	} else if fi, err := os.Stat(name); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("%s is not an executable file: %w", name, ErrUnknownHandler)
	}
	return &external{name: name, path: path}, nil
}

// external is a handler run as a child process, one per claimed process.
type external struct {
	name, path string
}

func (h *external) Name() string { return h.name }

func (h *external) Claim(p *Process) (Resolver, error) {
	c, err := start(h.path)
	if err != nil {
		return nil, err
	}
	req := fmt.Sprintf("claim %d %d %d %s %s\n", p.PID, p.NSPID, p.UID, escape(p.Root), escape(p.Comm))
	resp, err := c.exchange(req, 1)
	if err == nil && resp[0].kind == "error" {
		err = fmt.Errorf("%s: claim: %s", h.path, resp[0].msg)
	}
	if err == nil && resp[0].kind != "yes" && resp[0].kind != "no" {
		err = fmt.Errorf("%s: claim: %w: %q is no answer to a claim", h.path, ErrProtocol, resp[0].kind)
	}
	if err != nil {
		c.close()
		return nil, err
	}
	if resp[0].kind == "no" {
		return nil, c.close()
	}
	src := resp[0].msg
	if src == "" {
		src = h.name
	}
	return &extResolver{c: c, source: src}, nil
}

// conn is the pipe pair to one running handler.
type conn struct {
	path   string
	cmd    *exec.Cmd
	w      io.WriteCloser
	r      *bufio.Reader
	stderr *tailBuffer
	killed atomic.Bool
	done   bool
}

func start(path string) (*conn, error) {
	cmd := exec.Command(path)
	// Its own process group, so that killing it also kills what it
	// started and nothing keeps its stdout open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	c := &conn{path: path, cmd: cmd, stderr: &tailBuffer{max: 4096}}
	cmd.Stderr = c.stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("anon handler: %w", err)
	}
	c.w, c.r = w, bufio.NewReaderSize(r, MaxLine)
	return c, nil
}

func (c *conn) kill() {
	c.killed.Store(true)
	syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
}

// exchange sends req and reads n responses, killing the handler if that
// takes longer than ExternalTimeout.
func (c *conn) exchange(req string, n int) ([]response, error) {
	timer := time.AfterFunc(ExternalTimeout, c.kill)
	defer timer.Stop()
	fail := func(err error) ([]response, error) {
		if c.killed.Load() && !errors.Is(err, ErrProtocol) {
			err = fmt.Errorf("no answer within %v, killed it", ExternalTimeout)
		}
		c.kill()
		// Reaped, its stderr is all there to quote.
		c.done = true
		if werr := c.cmd.Wait(); !c.killed.Load() || errors.Is(err, errExited) {
			err = fmt.Errorf("%w (%v)", err, werr)
		}
		return nil, fmt.Errorf("%s: %w%s", c.path, err, c.stderr.context())
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
		resp, err := parseResponse(string(line[:len(line)-1]))
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

// close asks the handler to quit and waits for it, killing it after
// ExternalTimeout.
func (c *conn) close() error {
	if c.done {
		return nil
	}
	c.done = true
	timer := time.AfterFunc(ExternalTimeout, c.kill)
	defer timer.Stop()
	io.WriteString(c.w, "quit\n")
	c.w.Close()
	err := c.cmd.Wait()
	if c.killed.Load() {
		return nil // already reported, or a handler slow to quit after answering all
	}
	if err != nil {
		return fmt.Errorf("%s: %w%s", c.path, err, c.stderr.context())
	}
	return nil
}

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
			r.err = fmt.Errorf("resolve: %w", err)
			break
		}
		for i, rs := range resp {
			switch rs.kind {
			case "ok", "none":
				out[lo+i] = rs.sym
			case "error":
				r.err = fmt.Errorf("%s: resolve: %s", r.c.path, rs.msg)
			default:
				r.err = fmt.Errorf("%s: resolve: %w: %q is no answer to a lookup", r.c.path, ErrProtocol, rs.kind)
			}
			if r.err != nil {
				// The stream is out of step; nothing after can be trusted.
				r.c.kill()
				break
			}
		}
	}
	return out
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
	kind string // yes, no, ok, none, error
	msg  string // yes: the source; error: the message
	sym  Symbol // ok, ambiguous
}

// parseResponse parses one response line, without its newline.
func parseResponse(line string) (response, error) {
	verb, rest, _ := strings.Cut(line, " ")
	switch verb {
	case "no", "none":
		if rest != "" || strings.Contains(line, " ") {
			return response{}, fmt.Errorf("%w: %q takes no arguments", ErrProtocol, verb)
		}
		return response{kind: verb}, nil
	case "yes", "error":
		return response{kind: verb, msg: rest}, nil
	case "ok", "ambiguous":
		f := strings.SplitN(rest, " ", 4)
		if verb == "ambiguous" {
			f = strings.SplitN(rest, " ", 3)
		}
		if len(f) < 3 || verb == "ok" && len(f) < 4 {
			return response{}, fmt.Errorf("%w: %q needs more fields: %q", ErrProtocol, verb, line)
		}
		start, err1 := strconv.ParseUint(f[0], 16, 64)
		size, err2 := strconv.ParseUint(f[1], 16, 64)
		if err := errors.Join(err1, err2); err != nil {
			return response{}, fmt.Errorf("%w: bad range in %q: %v", ErrProtocol, line, err)
		}
		if size == 0 || start+size < start {
			return response{}, fmt.Errorf("%w: empty or wrapping range in %q", ErrProtocol, line)
		}
		s := Symbol{Start: start, Size: size}
		if verb == "ok" {
			gen, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				return response{}, fmt.Errorf("%w: bad generation in %q: %v", ErrProtocol, line, err)
			}
			if f[3] == "" {
				return response{}, fmt.Errorf("%w: empty name in %q", ErrProtocol, line)
			}
			s.Gen, s.Name = gen, f[3]
			return response{kind: "ok", sym: s}, nil
		}
		s.Ambiguous = strings.Split(f[2], "\t")
		if len(s.Ambiguous) < 2 || len(s.Ambiguous) > MaxAmbiguous {
			return response{}, fmt.Errorf("%w: ambiguous needs 2 to %d names, got %d", ErrProtocol, MaxAmbiguous, len(s.Ambiguous))
		}
		if slices.Contains(s.Ambiguous, "") {
			return response{}, fmt.Errorf("%w: empty name in %q", ErrProtocol, line)
		}
		return response{kind: "ok", sym: s}, nil
	}
	return response{}, fmt.Errorf("%w: unknown response %q", ErrProtocol, truncate(line, 80))
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

// tailBuffer keeps the last max bytes written to it: a handler's stderr,
// quoted in errors.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) context() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(bytes.TrimSpace(t.b))
	if s == "" {
		return ""
	}
	return "; its stderr: " + s
}
