package anon

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/codemap"
	"github.com/jitprof/jitprof/internal/jitname"
)

// installExample builds examples/anonhandler as jitprof-anon-example in a
// directory put first on PATH.
func installExample(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(bin, ExternalPrefix+"example"), "../../examples/anonhandler")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return bin
}

func TestExternalExample(t *testing.T) {
	installExample(t)
	data := t.TempDir()
	t.Setenv("ANONHANDLER_DIR", data)
	if err := os.WriteFile(filepath.Join(data, "jitsyms-77.txt"), []byte("loop_a 1000 100\nloop_b 1100 80\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hs, err := Select([]string{"example,perfmap"})
	if err != nil {
		t.Fatal(err)
	}
	// Not its process: the example says no, and perfmap finds nothing.
	if r, _, errs := Claim(hs, &Process{PID: 78}); r != nil || len(errs) != 1 || !errors.Is(errs[0], ErrNoData) {
		t.Errorf("Claim of pid 78 = %v, %v; want a decline and perfmap's ErrNoData", r, errs)
	}
	r, h, errs := Claim(hs, &Process{PID: 77, Comm: "toy jit", Root: "/proc/77/root"})
	if r == nil || h.Name() != "example" {
		t.Fatalf("example did not claim: %v", errs)
	}
	if want := "example " + filepath.Join(data, "jitsyms-77.txt"); r.Source() != want {
		t.Errorf("Source() = %q, want %q", r.Source(), want)
	}
	if _, ok := r.(BatchResolver); !ok {
		t.Error("external resolver is no BatchResolver")
	}
	// More queries than one batch holds, to cross a batch boundary.
	qs := make([]Query, MaxBatch+3)
	want := make([]Symbol, len(qs))
	for i := range qs {
		qs[i] = Query{Addr: 0x1000 + uint64(i%0x200), Time: uint64(i)}
		switch a := qs[i].Addr; {
		case a < 0x1100:
			want[i] = Symbol{Name: "loop_a", Start: 0x1000, Size: 0x100}
		case a < 0x1180:
			want[i] = Symbol{Name: "loop_b", Start: 0x1100, Size: 0x80}
		}
	}
	if got := ResolveBatch(r, qs); !reflect.DeepEqual(got, want) {
		t.Errorf("ResolveBatch differs from the file")
	}
	if got, ok := r.Resolve(0x1101, 0); !ok || got.Name != "loop_b" {
		t.Errorf("Resolve(0x1101) = %+v, %v", got, ok)
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// script installs a shell script as an external handler.
func script(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), ExternalPrefix+name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// external returns the external handler at path with opts' limits.
func external1(t *testing.T, path string, opts ExternalOptions) Handler {
	t.Helper()
	hs, err := opts.Select([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	return hs[0]
}

func TestExternalFailures(t *testing.T) {
	tests := []struct {
		name, body string
		claimErr   string // error from Claim, or "" if it claims
		closeErr   string // error from Close after one Resolve
	}{
		{"hangs on claim", "read l; sleep 60\n", "no answer within 500ms, killed it", ""},
		{"child keeps stdout", "read l; sleep 60 & wait\n", "no answer within 500ms, killed it", ""},
		{"hangs on resolve", "read l; echo yes; sleep 60\n", "", "no answer within 500ms, killed it"},
		{"exits", "echo oops >&2; exit 3\n", "exited before answering (exit status 3); its stderr: oops", ""},
		{"exits on resolve", "read l; echo yes; read l; exit 0\n", "", "exited before answering"},
		{"garbage", "read l; echo maybe\n", `unknown response "maybe"`, ""},
		{"garbage on resolve", "read l; echo yes; read l; read l; echo 0x10\n", "", `unknown response "0x10"`},
		{"error", "read l; echo error cannot read the map\n", "claim: cannot read the map", ""},
		{"error on resolve", "read l; echo yes; read l; read l; echo error the map is gone; read l\n", "", "resolve: the map is gone"},
		{"error with escapes", "read l; printf 'error \\033[2Jgone\\n'\n", "claim: ?[2Jgone", ""},
		{"answers out of turn", "read l; echo yes; read l; read l; echo no\n", "", `"no", is no answer to a lookup`},
		{"bad range", "read l; echo yes; read l; read l; echo ok 10 0 1 f\n", "", "empty or wrapping range"},
		// Ranges must hold the address asked (0x10), and be a size code can have.
		{"range elsewhere", "read l; echo yes; read l; read l; echo ok 1000 10 1 f; read l\n", "", "answer 1 of 1 is 0x1000-0x1010, which does not hold the address asked, 0x10"},
		{"range 2^63", "read l; echo yes; read l; read l; echo ok 0 8000000000000000 1 f; read l\n", "", "larger than any code can be (2 GiB)"},
		// Lines nobody asked for: the next request, or the quit, finds them.
		{"two answers to a claim", "read l; printf 'yes\\nnone\\n'; read l; read l; echo none; read l\n", "", `output before request "resolve 1", which nobody asked for`},
		{"two answers to a lookup", "read l; echo yes; read l; read l; echo none; echo none; read l\n", "", "after the last answer, which nobody asked for"},
		{"floods", "read l; echo yes; read l; read l; yes none\n", "", "after the last answer, which nobody asked for"},
		{"long line", "read l; head -c 70000 /dev/zero | tr '\\0' x; echo\n", "longer than 65536 bytes", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Only the handlers that hang are timed out; the others
			// get a timeout no loaded machine reaches, so that a shell
			// slow to start its pipeline is never taken for a hang.
			timeout := 20 * time.Second
			if strings.Contains(tt.claimErr+tt.closeErr, "no answer within") {
				timeout = 500 * time.Millisecond
			}
			h := external1(t, script(t, "x", tt.body), ExternalOptions{Timeout: timeout})
			start := time.Now()
			r, err := h.Claim(&Process{PID: 1})
			if tt.claimErr != "" {
				if r != nil || err == nil || !strings.Contains(err.Error(), tt.claimErr) {
					t.Fatalf("Claim = %v, %v; want error %q", r, err, tt.claimErr)
				}
			} else {
				if err != nil || r == nil {
					t.Fatalf("Claim = %v, %v", r, err)
				}
				if s, ok := r.Resolve(0x10, 1); ok {
					t.Errorf("Resolve = %+v from a broken handler", s)
				}
				err := r.Close()
				if err == nil || !strings.Contains(err.Error(), tt.closeErr) {
					t.Errorf("Close = %v, want %q", err, tt.closeErr)
				}
			}
			// The handler sleeps 60 s: well under that, the timeout
			// stopped it, however loaded the machine.
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %v: the timeout did not stop it", d)
			}
		})
	}
}

// TestExternalTimedOutNotAskedAgain: a handler that hangs is asked about
// one process only; six processes cost one timeout, not six.
func TestExternalTimedOutNotAskedAgain(t *testing.T) {
	const timeout = 300 * time.Millisecond
	h := external1(t, script(t, "hang", "read l; sleep 60\n"), ExternalOptions{Timeout: timeout})
	for pid := 1; pid <= 6; pid++ {
		r, err := h.Claim(&Process{PID: pid})
		if r != nil || err == nil {
			t.Fatalf("pid %d: Claim = %v, %v", pid, r, err)
		}
		switch {
		case pid == 1 && (errors.Is(err, ErrNotAsked) || !strings.Contains(err.Error(), "no answer within 300ms")):
			t.Errorf("pid 1: %v, want a timeout", err)
		case pid > 1 && (!errors.Is(err, ErrNotAsked) || !strings.Contains(err.Error(), "not asked: it timed out on pid 1")):
			t.Errorf("pid %d: %v, want ErrNotAsked after pid 1's timeout", pid, err)
		}
	}
}

// TestExternalTimedOutNotAskedAgainInParallel: processes are claimed
// several at a time; a handler that hangs still times out once only, and
// the others are not asked.
func TestExternalTimedOutNotAskedAgainInParallel(t *testing.T) {
	const timeout = 300 * time.Millisecond
	h := external1(t, script(t, "hang", "read l; sleep 60\n"), ExternalOptions{Timeout: timeout})
	errs := make([]error, 6)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = h.Claim(&Process{PID: i + 1})
		}()
	}
	wg.Wait()
	timedOut := 0
	for _, err := range errs {
		switch {
		case err != nil && strings.Contains(err.Error(), "no answer within 300ms"):
			timedOut++
		case !errors.Is(err, ErrNotAsked):
			t.Errorf("Claim: %v, want a timeout or ErrNotAsked", err)
		}
	}
	if timedOut != 1 {
		t.Errorf("%d claims timed out, want 1: %v", timedOut, errs)
	}
}

// TestExternalBudget: a slow handler that always answers in time is cut
// off when the budget all handlers share is spent, however many processes
// are left.
func TestExternalBudget(t *testing.T) {
	const budget = 700 * time.Millisecond
	slow := script(t, "slow", "read l; sleep 0.2; echo no\n")
	hs, err := ExternalOptions{Timeout: 5 * time.Second, Budget: budget}.Select([]string{slow, slow + "x"})
	if err == nil {
		t.Fatalf("Select accepted a missing executable: %v", names(hs))
	}
	h := external1(t, slow, ExternalOptions{Timeout: 5 * time.Second, Budget: budget})
	var last error
	for pid := 1; pid <= 20; pid++ {
		r, err := h.Claim(&Process{PID: pid})
		if r != nil {
			t.Fatalf("pid %d claimed", pid)
		}
		last = err
	}
	if !errors.Is(last, ErrNotAsked) || !strings.Contains(last.Error(), "the 700ms all anon handlers may take is spent") {
		t.Errorf("last claim: %v, want ErrNotAsked for the budget", last)
	}
}

// FuzzParseResponse: whatever a handler writes, in a session of either
// protocol version, a line is a protocol error or an answer jitprof can
// use as it is.
func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{"yes", "yes perf map /tmp/x", "no", "none", "ok 1000 10 3 JS:*fib /a.js:1", "ambiguous 10 10 a\tb", "error x", "ok ffffffffffffffff 2 0 x", "ok 1 1 -1 x", "no ",
		"protocol 2", "protocol 3", "protocol 1", "protocol 02", "src 1000 10 0 /a.js 3 JS:*fib", "src 1000 10 0 /my%20app/a%25.js 0 f g", "src 1000 10 0 - 3 f", "src 1000 10 0 %1 3 f", "src 1000 10 0 a%1b%0a 3 f", "src 1 1 0 a -1 f"} {
		f.Add(s, uint8(1))
		f.Add(s, uint8(2))
	}
	f.Fuzz(func(t *testing.T, line string, version uint8) {
		// Any line is a source file a handler can name, escaped.
		if r, err := parseResponse("src 1000 10 0 "+escape(line)+" 7 f", 2); line != "" && (err != nil || r.sym.File != printable(line)) {
			t.Errorf("the file %q escaped: %+v, %v", line, r.sym, err)
		}
		r, err := parseResponse(line, int(version))
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Errorf("error %v does not wrap ErrProtocol", err)
			}
			return
		}
		if r.kind == "ok" && (r.sym.Size == 0 || r.sym.Start+r.sym.Size < r.sym.Start) {
			t.Errorf("%q: accepted bad range %+v", line, r.sym)
		}
		if r.kind == "ok" && (r.sym.Name == "") == (len(r.sym.Ambiguous) == 0) {
			t.Errorf("%q: %+v has neither or both of a name and ambiguous names", line, r.sym)
		}
		if r.kind == "ok" && r.sym.Size > codemap.MaxCodeSize {
			t.Errorf("%q: accepted a range of %#x bytes", line, r.sym.Size)
		}
		for _, n := range append([]string{r.sym.Name}, r.sym.Ambiguous...) {
			if len(n) > jitname.Max {
				t.Errorf("%q: name of %d bytes", line, len(n))
			}
		}
		// Source positions come in sessions of version 2 only, with a
		// file to show as it is.
		if r.sym.File != "" || r.sym.Line != 0 {
			if version < 2 || r.sym.File == "" || r.sym.Line < 0 {
				t.Errorf("%q in a session of version %d: accepted %+v", line, version, r.sym)
			}
			if printable(r.sym.File) != r.sym.File {
				t.Errorf("%q: source file %q has control bytes", line, r.sym.File)
			}
		}
		if r.kind == "protocol" && r.version < 2 {
			t.Errorf("%q: accepted protocol version %d", line, r.version)
		}
	})
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{"": "-", "-": "%2D", "/proc/1/root": "/proc/1/root", "my jit%\n": "my%20jit%25%0A"} {
		if got := escape(in); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
		if back, err := unescape(want); err != nil || back != in {
			t.Errorf("unescape(%q) = %q, %v; want %q", want, back, err, in)
		}
	}
	for _, bad := range []string{"%", "a%2", "%zz", "%%41"} {
		if got, err := unescape(bad); err == nil {
			t.Errorf("unescape(%q) = %q, want an error", bad, got)
		}
	}
}
