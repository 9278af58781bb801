package anon

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/codemap"
	"github.com/jitprof/jitprof/internal/jitname"
)

// scripted is a handler that runs in the test process behind pipes and
// answers each request (the claim, each resolve batch, the quit) with the
// next part of a script: parts are separated by '\x00'; a part "\x01"
// never answers, "\x02" closes its output as an exiting handler would.
type scripted struct {
	in   *io.PipeReader
	out  *io.PipeWriter
	stop chan struct{}
	once sync.Once
	done chan struct{}
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
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), "resolve "); ok {
			k, _ := strconv.Atoi(n)
			for range k {
				if _, err := in.ReadString('\n'); err != nil {
					return
				}
			}
		}
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
			run: func(*external, io.Writer) (peer, io.WriteCloser, io.Reader, error) {
				p, w, r := runScripted(script)
				peers = append(peers, p)
				return p, w, r, nil
			}}
		start := time.Now()
		r, err := h.Claim(&Process{PID: 7, Comm: "toy jit"})
		if r != nil && err != nil {
			t.Fatalf("Claim = %v, %v", r, err)
		}
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
		run: func(*external, io.Writer) (peer, io.WriteCloser, io.Reader, error) {
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
