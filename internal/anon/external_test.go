package anon

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
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

func TestExternalFailures(t *testing.T) {
	old := ExternalTimeout
	ExternalTimeout = 500 * time.Millisecond
	t.Cleanup(func() { ExternalTimeout = old })
	tests := []struct {
		name, body string
		claimErr   string // error from Claim, or "" if it claims
		closeErr   string // error from Close after one Resolve
	}{
		{"hangs on claim", "read l; sleep 60\n", "no answer within 500ms, killed it", ""},
		{"child keeps stdout", "read l; sleep 60 & wait\n", "no answer within 500ms, killed it", ""},
		{"hangs on resolve", "read l; echo yes; sleep 60\n", "", "no answer within 500ms, killed it"},
		{"exits", "echo oops >&2; exit 3\n", "exited before answering (exit status 3); its stderr: oops", ""},
		{"garbage", "read l; echo maybe\n", `unknown response "maybe"`, ""},
		{"error", "read l; echo error cannot read the map\n", "claim: cannot read the map", ""},
		{"answers out of turn", "read l; echo yes; read l; read l; echo no\n", "", `"no" is no answer to a lookup`},
		{"bad range", "read l; echo yes; read l; read l; echo ok 10 0 1 f\n", "", "empty or wrapping range"},
		{"long line", "read l; head -c 70000 /dev/zero | tr '\\0' x; echo\n", "longer than 65536 bytes", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := findExternal(script(t, "x", tt.body))
			if err != nil {
				t.Fatal(err)
			}
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
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v: the timeout did not stop it", d)
			}
		})
	}
}

func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{"yes", "yes perf map /tmp/x", "no", "none", "ok 1000 10 3 JS:*fib /a.js:1", "ambiguous 10 10 a\tb", "error x", "ok ffffffffffffffff 2 0 x", "ok 1 1 -1 x", "no "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r, err := parseResponse(line)
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
	})
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{"": "-", "-": "%2D", "/proc/1/root": "/proc/1/root", "my jit%\n": "my%20jit%25%0A"} {
		if got := escape(in); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
	}
}
