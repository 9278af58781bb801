package anon

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/codemap"
	"github.com/jitprof/jitprof/internal/jitname"
	"github.com/jitprof/jitprof/internal/trust"
)

// scripted is a handler that runs in the test process behind pipes and
// answers each request (the claim, version 2's details, each resolve
// batch, the quit) with the next part of a script: parts are separated by
// '\x00'; a part "\x01" never answers, "\x02" closes its output as an
// exiting handler would.
type scripted struct {
	in   *io.PipeReader
	out  *io.PipeWriter
	stop chan struct{}
	once sync.Once
	done chan struct{}
	reqs []string // the requests read, whole; read them after done
}

func runScripted(script []byte) (*scripted, io.WriteCloser, io.Reader) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &scripted{in: inR, out: outW, stop: make(chan struct{}), done: make(chan struct{})}
	go s.serve(bytes.Split(script, []byte{0}))
	return s, inW, outR
}

func (s *scripted) kill() {
	s.once.Do(func() {
		close(s.stop)
		s.in.CloseWithError(errors.New("killed"))
		s.out.Close()
	})
}

func (s *scripted) wait() error {
	<-s.done
	return nil
}

func (s *scripted) serve(parts [][]byte) {
	defer close(s.done)
	defer s.out.Close()
	in := bufio.NewReader(s.in)
	for i := 0; ; i++ {
		line, err := in.ReadString('\n')
		if err != nil {
			return
		}
		req := line
		more := func() bool {
			line, err = in.ReadString('\n')
			req += line
			return err == nil
		}
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), "resolve "); ok {
			k, _ := strconv.Atoi(n)
			for range k {
				if !more() {
					return
				}
			}
		}
		// Version 2's details, after the handler's "protocol N".
		if strings.HasPrefix(line, "protocol ") {
			for line != "end\n" {
				if !more() {
					return
				}
			}
		}
		s.reqs = append(s.reqs, req)
		if i >= len(parts) {
			continue
		}
		switch p := parts[i]; {
		case len(p) == 1 && p[0] == 1:
			<-s.stop
			return
		case len(p) == 1 && p[0] == 2:
			return
		default:
			if _, err := s.out.Write(p); err != nil {
				return
			}
		}
	}
}

// FuzzExternalConversation drives a whole conversation with an external
// handler whose every answer the fuzzer writes: a claim, two resolve
// batches, the quit. Whatever the handler says, jitprof must neither
// panic nor hang, and every answer it accepts must hold the address asked,
// with a range code can have and names within jitname.Max.
func FuzzExternalConversation(f *testing.F) {
	for _, s := range []string{
		"yes toy\n\x00ok 1000 100 1 loop_a\nnone\nok 1100 80 0 loop b\n\x00ambiguous 1000 200 a\tb\nnone\n\x00",
		"no\n",
		"yes\n\x00error gone\n",
		"yes\n\x00ok 2000 10 1 elsewhere\nnone\nnone\n",
		"yes\nnone\n\x00none\nnone\nnone\n",
		"yes\n\x00none\nnone\nnone\nnone\n\x00none\nnone\n\x00extra\n",
		"yes\n\x00\x01",
		"\x02",
		"yes\n\x00ok 1000 8000000000000000 1 huge\nnone\nnone\n",
		"yes\n\x00ok 1000 100 1 " + strings.Repeat("n", 5000) + "\nnone\nnone\n",
		"yes\n\x00ok 1000 1",
		// Version 2.
		"protocol 2\n\x00yes v2\n\x00src 1000 100 1 /a.js 3 loop_a\nnone\nok 1100 80 0 loop b\n\x00src 1000 200 0 /my%20b.js 0 a b\nnone\n\x00",
		"protocol 3\n\x00no\n",
		"protocol 2\n\x00protocol 2\n",
		"protocol 1\n",
		"protocol 2\n\x00\x01",
		"protocol 2\n\x00yes\n\x00src 1000 100 1 %zz 3 loop_a\nnone\nnone\n",
		"yes\n\x00src 1000 100 1 /a.js 3 loop_a\nnone\nnone\n",
	} {
		f.Add([]byte(s))
	}
	batches := [][]Query{
		{{0x1010, 1}, {0x5000, 2}, {0x1100, 3}},
		{{0x1000, 4}, {0x10, 5}},
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		var peers []*scripted
		h := &external{name: "fuzz", path: "jitprof-anon-fuzz", shown: "jitprof-anon-fuzz",
			budget: &budget{timeout: 5 * time.Millisecond, total: time.Second},
			run: func(*external, trust.Cred, []*os.File, io.Writer) (peer, io.WriteCloser, io.Reader, error) {
				p, w, r := runScripted(script)
				peers = append(peers, p)
				return p, w, r, nil
			}}
		start := time.Now()
		r, err := h.Claim(&Process{PID: 7, Comm: "toy jit", Exe: "/opt/toy jit", Span: TimeRange{10, 20},
			Embedded: map[string][]byte{"/tmp/perf-7.map": []byte("1000 100 loop_a\n")}, Kinds: map[string]string{"/tmp/perf-7.map": "perfmap"}})
		if r != nil && err != nil {
			t.Fatalf("Claim = %v, %v", r, err)
		}
		// Source positions are version 2's, which the handler asks for
		// instead of answering the claim.
		v2 := bytes.HasPrefix(script, []byte("protocol "))
		if r != nil {
			for _, qs := range batches {
				syms := ResolveBatch(r, qs)
				if len(syms) != len(qs) {
					t.Fatalf("%d answers to %d queries", len(syms), len(qs))
				}
				for i, s := range syms {
					if !s.Found() {
						if s.Name != "" || s.Ambiguous != nil {
							t.Errorf("an unknown address with names: %+v", s)
						}
						continue
					}
					if a := qs[i].Addr; a < s.Start || a-s.Start >= s.Size {
						t.Errorf("query %#x answered with %#x+%#x", a, s.Start, s.Size)
					}
					if s.Size > codemap.MaxCodeSize || (s.Name == "") == (len(s.Ambiguous) == 0) {
						t.Errorf("accepted %+v", s)
					}
					if s.File != "" && !v2 {
						t.Errorf("a source position from a handler of version 1: %+v", s)
					}
					for _, n := range append([]string{s.Name}, s.Ambiguous...) {
						if len(n) > jitname.Max {
							t.Errorf("a name of %d bytes", len(n))
						}
					}
				}
			}
			r.Close()
		}
		// Each exchange is bounded: a claim, two batches and a quit.
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the conversation took %v", d)
		}
		for _, p := range peers {
			select {
			case <-p.done:
			case <-time.After(time.Second):
				t.Fatal("the handler was left running")
			}
		}
	})
}

// TestScriptedConversation checks the fake handler itself on a script that
// answers everything well, so the fuzz target tests jitprof and not it.
func TestScriptedConversation(t *testing.T) {
	script := "yes toy\n\x00ok 1000 100 1 loop_a\nnone\n\x00ambiguous 1000 200 a\tb\n"
	h := &external{name: "fuzz", path: "jitprof-anon-fuzz", shown: "jitprof-anon-fuzz", budget: &budget{timeout: time.Second, total: time.Minute},
		run: func(*external, trust.Cred, []*os.File, io.Writer) (peer, io.WriteCloser, io.Reader, error) {
			p, w, r := runScripted([]byte(script))
			return p, w, r, nil
		}}
	r, err := h.Claim(&Process{PID: 7})
	if err != nil || r.Source() != "toy" {
		t.Fatalf("Claim = %v, %v", r, err)
	}
	got := ResolveBatch(r, []Query{{0x1010, 1}, {0x5000, 2}})
	if got[0].Name != "loop_a" || got[0].Gen != 1 || got[1].Found() {
		t.Errorf("first batch: %+v", got)
	}
	got = ResolveBatch(r, []Query{{0x1100, 3}})
	if len(got[0].Ambiguous) != 2 {
		t.Errorf("second batch: %+v", got)
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// talkTo returns a handler that runs script in the test process, and the
// peers it started.
func talkTo(script string) (*external, *[]*scripted) {
	var peers []*scripted
	h := &external{name: "v2", path: "jitprof-anon-v2", shown: "jitprof-anon-v2", budget: &budget{timeout: time.Second, total: time.Minute},
		run: func(*external, trust.Cred, []*os.File, io.Writer) (peer, io.WriteCloser, io.Reader, error) {
			p, w, r := runScripted([]byte(script))
			peers = append(peers, p)
			return p, w, r, nil
		}}
	return h, &peers
}

// TestConversationV2: a handler that answers the claim with "protocol 2"
// is told the executable, the time range and the data it was given, by
// descriptor, and may answer with source positions.
func TestConversationV2(t *testing.T) {
	h, peers := talkTo("protocol 2\n\x00yes toy\n\x00src 1000 100 2 /src/my%20app.js 12 loop_a\nnone\n\x00")
	p := &Process{PID: 7, Comm: "toy", Exe: "/opt/my jit", Span: TimeRange{From: 100, To: 900},
		Embedded: map[string][]byte{"/tmp/perf-7.map": []byte("1000 100 loop_a\n"), "[tsc]": make([]byte, 32)},
		Kinds:    map[string]string{"/tmp/perf-7.map": "perfmap", "[tsc]": "tsc"}}
	r, err := h.Claim(p)
	if err != nil || r.Source() != "toy" {
		t.Fatalf("Claim = %v, %v", r, err)
	}
	got := ResolveBatch(r, []Query{{0x1010, 1}, {0x5000, 2}})
	want := Symbol{Name: "loop_a", Start: 0x1000, Size: 0x100, Gen: 2, File: "/src/my app.js", Line: 12}
	if got[0].Name != want.Name || got[0].File != want.File || got[0].Line != want.Line || got[0].Gen != 2 || got[1].Found() {
		t.Errorf("ResolveBatch = %+v, want %+v and nothing", got, want)
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	<-(*peers)[0].done
	reqs := (*peers)[0].reqs
	wantDetails := "protocol 2\nexe /opt/my%20jit\nrange 100 900\n" +
		"data perfmap recording /proc/self/fd/3 16 /tmp/perf-7.map\n" +
		"data tsc recording /proc/self/fd/4 32 [tsc]\nend\n"
	if len(reqs) != 4 || reqs[0] != "claim 7 0 0 - toy\n" || reqs[1] != wantDetails || reqs[3] != "quit\n" {
		t.Errorf("requests:\n%q\nwant the claim, then\n%q", reqs, wantDetails)
	}
	if h.version.Load() != 2 {
		t.Errorf("the handler's version is %d, want 2", h.version.Load())
	}
}

// TestConversationV1: a handler that answers the claim at once is of
// version 1: it hears nothing of version 2, src is no answer from it, and
// later processes' data are not copied for it.
func TestConversationV1(t *testing.T) {
	h, peers := talkTo("yes\n\x00src 1000 100 2 /a.js 12 loop_a\n\x00")
	p := &Process{PID: 7, Exe: "/opt/jit", Embedded: map[string][]byte{"/tmp/perf-7.map": []byte("1000 100 loop_a\n")}}
	r, err := h.Claim(p)
	if err != nil {
		t.Fatalf("Claim = %v, %v", r, err)
	}
	if s, ok := r.Resolve(0x1010, 1); ok {
		t.Errorf("Resolve = %+v from a src answer of version 1", s)
	}
	if err := r.Close(); err == nil || !strings.Contains(err.Error(), `"src" answers only in a session of protocol version 2`) {
		t.Errorf("Close = %v, want a protocol error", err)
	}
	<-(*peers)[0].done
	if reqs := (*peers)[0].reqs; len(reqs) != 2 || !strings.HasPrefix(reqs[0], "claim ") || !strings.HasPrefix(reqs[1], "resolve 1\n") {
		t.Errorf("requests %q", reqs)
	}
	if h.version.Load() != 1 {
		t.Errorf("the handler's version is %d, want 1", h.version.Load())
	}
}

// TestConversationDeclined: a handler of version 2 that declines a
// process some of whose data it was not given says so, as missing data
// (shown when no handler claims the process).
func TestConversationDeclined(t *testing.T) {
	p := &Process{PID: 7, Embedded: map[string][]byte{}}
	for i := range MaxDataFiles + 1 {
		p.Embedded[fmt.Sprintf("/tmp/jit-%02d", i)] = []byte("x")
	}
	h, peers := talkTo("protocol 2\n\x00no\n")
	r, err := h.Claim(p)
	if r != nil || !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), "it declined, and was not given /tmp/jit-16: more than the 16 files a handler is given") {
		t.Errorf("Claim = %v, %v", r, err)
	}
	<-(*peers)[0].done
	if d := (*peers)[0].reqs[1]; strings.Count(d, "\ndata ") != MaxDataFiles || !strings.Contains(d, "data - recording /proc/self/fd/18 1 /tmp/jit-15\n") {
		t.Errorf("details:\n%s", d)
	}
	// Given all, a decline is no error.
	delete(p.Embedded, "/tmp/jit-16")
	h, _ = talkTo("protocol 2\n\x00no\n")
	if r, err := h.Claim(p); r != nil || err != nil {
		t.Errorf("Claim = %v, %v", r, err)
	}
}

// TestGatherDataLimit: data past MaxData bytes stays with jitprof.
func TestGatherDataLimit(t *testing.T) {
	p := &Process{PID: 7, Embedded: map[string][]byte{"/a": make([]byte, 600), "/b": make([]byte, 500), "/c": make([]byte, 400)}}
	d := gatherData(p, 3, 1000)
	defer d.closeFiles()
	if len(d.files) != 2 || d.items[0].origin != "/a" || d.items[1].origin != "/c" || len(d.left) != 1 || !strings.Contains(d.left[0], "/b: 500 bytes, past the") {
		t.Errorf("passed %+v, left %q", d.items, d.left)
	}
	for i, f := range d.files {
		if st, err := f.Stat(); err != nil || st.Size() != int64(d.items[i].size) {
			t.Errorf("%s: %v, %v", d.items[i].origin, st, err)
		}
	}
}

// TestExecutable: without Exe, the program is the first executable file
// mapping, by time and then address; anonymous memory and memfds are
// none.
func TestExecutable(t *testing.T) {
	for _, tt := range []struct {
		p    Process
		want string
	}{
		{Process{Exe: "/bin/given", Mappings: []Mapping{{Start: 1, Path: "/bin/mapped", Exec: true}}}, "/bin/given"},
		{Process{Mappings: []Mapping{
			{Start: 0x7f00, Time: 5, Path: "/lib/ld.so", Exec: true},
			{Start: 0x1000, Time: 5, Path: "//anon", Exec: true},
			{Start: 0x2000, Time: 5, Path: "/memfd:jit (deleted)", Exec: true},
			{Start: 0x3000, Time: 5, Path: "/usr/bin/data", Exec: false},
			{Start: 0x5500, Time: 5, Path: "/usr/bin/node", Exec: true},
		}}, "/usr/bin/node"},
		{Process{Mappings: []Mapping{{Start: 0x7f00, Time: 1, Path: "/usr/bin/java", Exec: true}, {Start: 0x1000, Time: 2, Path: "/lib/libjvm.so", Exec: true}}}, "/usr/bin/java"},
		{Process{Mappings: []Mapping{{Start: 0x1000, Path: "[anon:v8]", Exec: true}}}, ""},
	} {
		if got := tt.p.Executable(); got != tt.want {
			t.Errorf("Executable of %+v = %q, want %q", tt.p, got, tt.want)
		}
	}
}

// TestConversationV2Disk: for a process the recording embedded nothing
// of, a handler of version 2 is given the files on disk that jitprof
// opened after its checks, not copies, and is told where they were.
func TestConversationV2Disk(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(root+"/tmp", 0o755)
	if err := os.WriteFile(root+"/tmp/perf-7.map", []byte("1000 100 loop_a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	var sp *scripted
	h := &external{name: "v2", path: "jitprof-anon-v2", shown: "jitprof-anon-v2", budget: &budget{timeout: time.Second, total: time.Minute},
		run: func(_ *external, _ trust.Cred, data []*os.File, _ io.Writer) (peer, io.WriteCloser, io.Reader, error) {
			for _, f := range data {
				b, _ := io.ReadAll(f)
				got = append(got, fmt.Sprintf("%s: %q", f.Name(), b))
			}
			p, w, r := runScripted([]byte("protocol 2\n\x00no\n"))
			sp = p
			return p, w, r, nil
		}}
	p := &Process{PID: 7, NSPID: 7, UID: os.Getuid(), Root: root}
	if r, err := h.Claim(p); r != nil || err != nil {
		t.Fatalf("Claim = %v, %v", r, err)
	}
	want := fmt.Sprintf("%s: %q", root+"/tmp/perf-7.map", "1000 100 loop_a\n")
	if len(got) != 1 || got[0] != want {
		t.Errorf("data given: %q, want %q", got, want)
	}
	<-sp.done
	if d := "data perfmap disk /proc/self/fd/3 16 " + escape(root+"/tmp/perf-7.map") + "\n"; len(sp.reqs) < 2 || !strings.Contains(sp.reqs[1], d) {
		t.Errorf("requests %q, want details with %q", sp.reqs, d)
	}
}

// TestConversationNewer: a handler that speaks a later version than
// jitprof is told the session is of jitprof's, and answers in it.
func TestConversationNewer(t *testing.T) {
	h, peers := talkTo("protocol 7\n\x00yes\n\x00src 1000 100 0 /a.js 3 f\n\x00")
	r, err := h.Claim(&Process{PID: 7})
	if err != nil || r == nil {
		t.Fatalf("Claim = %v, %v", r, err)
	}
	if s, _ := r.Resolve(0x1000, 1); s.Name != "f" || s.File != "/a.js" || s.Line != 3 {
		t.Errorf("Resolve = %+v", s)
	}
	r.Close()
	<-(*peers)[0].done
	if reqs := (*peers)[0].reqs; len(reqs) < 2 || !strings.HasPrefix(reqs[1], "protocol 2\n") {
		t.Errorf("requests %q, want the session's version, 2", reqs)
	}
}
