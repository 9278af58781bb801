package anon

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/trust"
)

func names(hs []Handler) []string {
	var l []string
	for _, h := range hs {
		l = append(l, h.Name())
	}
	return l
}

func TestSelect(t *testing.T) {
	t.Setenv(LibraryPathEnv, "") // the error lists the directories searched
	bin := t.TempDir()
	exe := filepath.Join(bin, ExternalPrefix+"mine")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho no\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, ExternalPrefix+"noexec"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	tests := []struct {
		args    []string
		want    []string
		wantErr string
	}{
		{nil, []string{"jitlog", "jitdump", "pypy", "perfmap"}, ""},
		{[]string{""}, []string{"jitlog", "jitdump", "pypy", "perfmap"}, ""},
		{[]string{"perfmap"}, []string{"perfmap"}, ""},
		{[]string{"perfmap,jitdump"}, []string{"perfmap", "jitdump"}, ""},
		{[]string{"perfmap, jitdump", "jitlog"}, []string{"perfmap", "jitdump", "jitlog"}, ""},
		{[]string{"perfmap", "perfmap,jitdump,perfmap"}, []string{"perfmap", "jitdump"}, ""},
		{[]string{"mine,perfmap"}, []string{"mine", "perfmap"}, ""},
		{[]string{exe}, []string{exe}, ""},
		{[]string{"perfmap,nosuch"}, nil, "--anon-handler=nosuch: no executable jitprof-anon-nosuch on PATH, and no library libjitprof-anon-nosuch.so or libnosuch.so in /usr/local/lib/jitprof, /usr/lib/jitprof: unknown anon handler (built in: jitdump, jitlog, perfmap, pypy)"},
		{[]string{"noexec"}, nil, "no executable jitprof-anon-noexec on PATH"},
		{[]string{"./nosuch"}, nil, "./nosuch is not an executable file"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, "|"), func(t *testing.T) {
			hs, err := Select(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrUnknownHandler) {
					t.Fatalf("Select = %v, %v; want error %q", names(hs), err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := names(hs); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Select = %v, want %v", got, tt.want)
			}
		})
	}
}

// fake is a handler with a scripted answer.
type fake struct {
	name string
	r    Resolver
	err  error
}

func (f fake) Name() string                     { return f.name }
func (f fake) Claim(*Process) (Resolver, error) { return f.r, f.err }

type nopResolver struct{}

func (nopResolver) Resolve(addr, t uint64) (Symbol, bool) { return Symbol{}, false }
func (nopResolver) Source() string                        { return "nop" }
func (nopResolver) Close() error                          { return nil }

func TestClaimOrder(t *testing.T) {
	missing := fake{name: "missing", err: ErrNoData}
	broken := fake{name: "broken", err: trust.ErrUntrusted}
	declines := fake{name: "declines"}
	claims := fake{name: "claims", r: nopResolver{}}
	tests := []struct {
		hs       []Handler
		claimer  string
		wantErrs int
	}{
		{[]Handler{declines, claims}, "claims", 0},
		{[]Handler{missing, claims}, "claims", 0}, // nothing to report: someone claimed
		{[]Handler{broken, missing, claims}, "claims", 1},
		{[]Handler{claims, broken}, "claims", 0},
		{[]Handler{missing, broken, declines}, "", 2},
	}
	for _, tt := range tests {
		r, h, errs := Claim(tt.hs, &Process{PID: 1})
		got := ""
		if h != nil {
			got = h.Name()
		}
		if got != tt.claimer || (r != nil) != (h != nil) || len(errs) != tt.wantErrs {
			t.Errorf("Claim(%v) = %s, %v; want %q and %d errors", names(tt.hs), got, errs, tt.claimer, tt.wantErrs)
		}
		if len(errs) == 2 && !errors.Is(errs[0], trust.ErrUntrusted) {
			t.Errorf("errors %v: ErrNoData should come last, after real failures", errs)
		}
	}
}
