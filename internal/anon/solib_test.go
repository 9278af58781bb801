package anon

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/trust"
)

// installHost builds jitprof-anon-host (agent/) and names it in
// $JITPROF_ANON_HOST.
func installHost(t *testing.T) {
	t.Helper()
	perftest.Need(t, "gcc")
	out := t.TempDir()
	os.Chmod(out, 0o755)
	cmd := exec.Command(perftest.Need(t, "make"), "-s", "-C", "../../agent", "OUT="+out, out+"/"+HostName)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make: %v\n%s", err, b)
	}
	t.Setenv(HostEnv, filepath.Join(out, HostName))
}

// library builds C source (or the example, for "") as libNAME.so in a
// directory put on $JITPROF_ANON_PATH, and returns its path.
func library(t *testing.T, dir, name, source string) string {
	t.Helper()
	src := "../../examples/anonhandler-so/example.c"
	if source != "" {
		src = filepath.Join(t.TempDir(), name+".c")
		if err := os.WriteFile(src, []byte(source), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lib := filepath.Join(dir, "lib"+name+".so")
	cmd := exec.Command("gcc", "-shared", "-fPIC", "-Wall", "-Werror", "-I../../agent", "-o", lib, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	os.Chmod(lib, 0o755)
	t.Setenv(LibraryPathEnv, dir)
	return lib
}

// TestLibraryExample: the example library, found on $JITPROF_ANON_PATH as
// libsoex.so or given by its path, names what the example executable
// names, batches included, in any order beside an executable and a
// built-in.
func TestLibraryExample(t *testing.T) {
	installHost(t)
	installExample(t)
	libs := t.TempDir()
	os.Chmod(libs, 0o755)
	library(t, libs, "soex", "")
	data := t.TempDir()
	t.Setenv("ANONHANDLER_DIR", data)
	if err := os.WriteFile(filepath.Join(data, "jitsyms-77.txt"), []byte("loop_a 1000 100\nloop_b 1100 80\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, order := range [][]string{{"soex", "example", "perfmap"}, {"perfmap,example", "soex"}, {"example", "perfmap", filepath.Join(libs, "libsoex.so")}} {
		hs, err := Select(order)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, h := range hs {
			names = append(names, h.Name())
		}
		if len(hs) != 3 || !IsExternal(hs[0]) && hs[0].Name() != "perfmap" {
			t.Fatalf("Select(%q) = %v", order, names)
		}
		for _, h := range hs {
			if h.Name() == "perfmap" {
				continue
			}
			r, err := h.Claim(&Process{PID: 77, Comm: "toy jit", Root: "/proc/77/root"})
			if err != nil || r == nil {
				t.Fatalf("%s: Claim = %v, %v", h.Name(), r, err)
			}
			qs := make([]Query, MaxBatch+3)
			for i := range qs {
				qs[i] = Query{Addr: 0x1000 + uint64(i%0x200), Time: uint64(i)}
			}
			got := ResolveBatch(r, qs)
			for i, s := range got {
				want := ""
				switch a := qs[i].Addr; {
				case a < 0x1100:
					want = "loop_a"
				case a < 0x1180:
					want = "loop_b"
				}
				if s.Name != want {
					t.Fatalf("%s: %#x named %q, want %q", h.Name(), qs[i].Addr, s.Name, want)
				}
			}
			if err := r.Close(); err != nil {
				t.Errorf("%s: Close: %v", h.Name(), err)
			}
			if r, err := h.Claim(&Process{PID: 78}); r != nil || err != nil {
				t.Errorf("%s: Claim of pid 78 = %v, %v; want a decline", h.Name(), r, err)
			}
		}
	}
}

const libHead = "#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n#include \"jitprof_anon.h\"\n"

// libBody is a library whose claim and resolve are the given C bodies.
func libBody(version, claim, resolve string) string {
	return libHead + "const uint32_t jitprof_anon_version = " + version + ";\n" +
		"int jitprof_anon_claim(const struct jitprof_anon_process *p, void **state, char *msg, size_t msg_len) {(void)p; (void)state; (void)msg; (void)msg_len; " + claim + "}\n" +
		"int jitprof_anon_resolve(void *state, struct jitprof_anon_query *q, size_t n, char *msg, size_t msg_len) {(void)state; (void)q; (void)n; (void)msg; (void)msg_len; " + resolve + "}\n" +
		"void jitprof_anon_close(void *state) {(void)state;}\n"
}

// TestLibraryFailures: a library that crashes, hangs or answers garbage
// costs the report what an executable handler that does so costs: an
// error saying what happened, within the timeout.
func TestLibraryFailures(t *testing.T) {
	installHost(t)
	const claims = "return JITPROF_ANON_CLAIMED;"
	tests := []struct {
		name, source string
		claimErr     string
		closeErr     string
	}{
		{"crashes in claim", libBody("1", "*(volatile int *)0 = 1; return 1;", "return 0;"), "exited before answering (signal: segmentation fault)", ""},
		{"crashes in resolve", libBody("1", claims, "abort();"), "", "exited before answering (signal: aborted)"},
		{"hangs in claim", libBody("1", "sleep(60); return 1;", "return 0;"), "no answer within 500ms, killed it", ""},
		{"hangs in resolve", libBody("1", claims, "sleep(60); return 0;"), "", "no answer within 500ms, killed it"},
		{"range elsewhere", libBody("1", claims, "q[0].start = 0x1000; q[0].size = 0x10; snprintf(q[0].name, q[0].name_len, \"f\"); return 0;"), "", "does not hold the address asked, 0x10"},
		{"name with a newline", libBody("1", claims, "q[0].start = 0; q[0].size = 0x100; snprintf(q[0].name, q[0].name_len, \"f\\nok 0 1 0 g\"); return 0;"), "", ""},
		{"error in claim", libBody("1", "snprintf(msg, msg_len, \"no map\\nhere\"); return JITPROF_ANON_ERROR;", "return 0;"), "claim: no map?here", ""},
		{"error in resolve", libBody("1", claims, "snprintf(msg, msg_len, \"map gone\"); return -1;"), "", "resolve: map gone"},
		{"another version", libBody("2", claims, "return 0;"), "interface version 2, this host of 1", ""},
		{"no resolve", libHead + "const uint32_t jitprof_anon_version = 1;\n", "lacks jitprof_anon_version, jitprof_anon_claim", ""},
	}
	libs := t.TempDir()
	os.Chmod(libs, 0o755)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "bad" + string(rune('a'+i))
			library(t, libs, name, tt.source)
			h := external1(t, name, ExternalOptions{Timeout: 500 * time.Millisecond})
			start := time.Now()
			r, err := h.Claim(&Process{PID: 1})
			if tt.claimErr != "" {
				if r != nil || err == nil || !strings.Contains(err.Error(), tt.claimErr) || !strings.Contains(err.Error(), "lib"+name+".so") {
					t.Fatalf("Claim = %v, %v; want error %q naming the library", r, err, tt.claimErr)
				}
				return
			}
			if err != nil || r == nil {
				t.Fatalf("Claim = %v, %v", r, err)
			}
			s, ok := r.Resolve(0x10, 1)
			err = r.Close()
			if tt.closeErr == "" {
				// A name cannot break the protocol: control bytes are
				// replaced.
				if !ok || s.Name != "f?ok 0 1 0 g" || err != nil {
					t.Errorf("Resolve = %+v, %v; Close = %v", s, ok, err)
				}
			} else if ok || err == nil || !strings.Contains(err.Error(), tt.closeErr) {
				t.Errorf("Resolve = %+v, %v; Close = %v, want %q", s, ok, err, tt.closeErr)
			}
			// The library sleeps 60 s: well under that, the timeout
			// stopped it, however loaded the machine.
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %v: the timeout did not stop it", d)
			}
		})
	}
}

// TestLibraryTrust: a library another user could have written or swapped
// is refused before anything runs it.
func TestLibraryTrust(t *testing.T) {
	installHost(t)
	libs := t.TempDir()
	os.Chmod(libs, 0o755)
	lib := library(t, libs, "soex", "")
	os.Chmod(lib, 0o775)
	if _, err := Select([]string{"soex"}); !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "writable by its group or by others") {
		t.Errorf("group-writable library: %v", err)
	}
	os.Chmod(lib, 0o755)
	link := filepath.Join(t.TempDir(), "libsolink.so")
	os.Symlink(lib, link)
	if _, err := Select([]string{link}); !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("symlinked library: %v", err)
	}
	if _, err := Select([]string{"nosuch"}); !errors.Is(err, ErrUnknownHandler) || !strings.Contains(err.Error(), "libnosuch.so") {
		t.Errorf("unknown handler: %v", err)
	}
}
