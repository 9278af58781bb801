package anon

import (
	"errors"
	"fmt"
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
	// testdata/jitprof_anon_v1.h is the header of version 1, for
	// libraries built before version 2.
	cmd := exec.Command("gcc", "-shared", "-fPIC", "-Wall", "-Werror", "-I../../agent", "-Itestdata", "-o", lib, src)
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
	if err := os.WriteFile(filepath.Join(data, "jitsyms-77.txt"), []byte("loop_a 1000 100 /src/a%.js 3\nloop_b 1100 80\n"), 0o644); err != nil {
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
				// The library speaks version 2, with source positions;
				// the executable, version 1, has none.
				file, line := "", 0
				if want == "loop_a" && !strings.HasPrefix(h.Name(), "example") {
					file, line = "/src/a%.js", 3
				}
				if s.File != file || s.Line != line {
					t.Fatalf("%s: %#x at %s:%d, want %s:%d", h.Name(), qs[i].Addr, s.File, s.Line, file, line)
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

// libBody is a library of interface version (1, with version 1's header,
// or 2) whose claim and resolve are the given C bodies.
func libBody(version int, claim, resolve string) string {
	header := "jitprof_anon.h"
	if version == 1 {
		header = "jitprof_anon_v1.h"
	}
	return libHead(header) + fmt.Sprintf("const uint32_t jitprof_anon_version = %d;\n", version) +
		"int jitprof_anon_claim(const struct jitprof_anon_process *p, void **state, char *msg, size_t msg_len) {(void)p; (void)state; (void)msg; (void)msg_len; " + claim + "}\n" +
		"int jitprof_anon_resolve(void *state, struct jitprof_anon_query *q, size_t n, char *msg, size_t msg_len) {(void)state; (void)q; (void)n; (void)msg; (void)msg_len; " + resolve + "}\n" +
		"void jitprof_anon_close(void *state) {(void)state;}\n"
}

func libHead(header string) string {
	return "#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <unistd.h>\n#include \"" + header + "\"\n"
}

// TestLibraryFailures: a library that crashes, hangs or answers garbage
// costs the report what an executable handler that does so costs: an
// error saying what happened, within the timeout.
func TestLibraryFailures(t *testing.T) {
	installHost(t)
	const claims = "return JITPROF_ANON_CLAIMED;"
	type test struct {
		name, source string
		claimErr     string
		closeErr     string
	}
	var tests []test
	// Libraries of both versions fail alike.
	for v := 1; v <= 2; v++ {
		vs := fmt.Sprintf("version %d: ", v)
		tests = append(tests, []test{
			{vs + "crashes in claim", libBody(v, "*(volatile int *)0 = 1; return 1;", "return 0;"), "exited before answering (signal: segmentation fault)", ""},
			{vs + "crashes in resolve", libBody(v, claims, "abort();"), "", "exited before answering (signal: aborted)"},
			{vs + "hangs in claim", libBody(v, "sleep(60); return 1;", "return 0;"), "no answer within 500ms, killed it", ""},
			{vs + "hangs in resolve", libBody(v, claims, "sleep(60); return 0;"), "", "no answer within 500ms, killed it"},
			{vs + "range elsewhere", libBody(v, claims, "q[0].start = 0x1000; q[0].size = 0x10; snprintf(q[0].name, q[0].name_len, \"f\"); return 0;"), "", "does not hold the address asked, 0x10"},
			{vs + "name with a newline", libBody(v, claims, "q[0].start = 0; q[0].size = 0x100; snprintf(q[0].name, q[0].name_len, \"f\\nok 0 1 0 g\"); return 0;"), "", ""},
			{vs + "error in claim", libBody(v, "snprintf(msg, msg_len, \"no map\\nhere\"); return JITPROF_ANON_ERROR;", "return 0;"), "claim: no map?here", ""},
			{vs + "error in resolve", libBody(v, claims, "snprintf(msg, msg_len, \"map gone\"); return -1;"), "", "resolve: map gone"},
		}...)
	}
	tests = append(tests, []test{
		// A source file cannot break the protocol either: it is escaped.
		{"version 2: file with a newline", libBody(2, claims, "q[0].start = 0; q[0].size = 0x100; snprintf(q[0].name, q[0].name_len, \"f\\nok 0 1 0 g\"); snprintf(q[0].file, q[0].file_len, \"a b\\n%%.js\"); q[0].line = 7; return 0;"), "", ""},
		{"version 3", libBody(3, claims, "return 0;"), "interface version 3, this host of 1 to 2", ""},
		{"version 0", libBody(0, claims, "return 0;"), "interface version 0, this host of 1 to 2", ""},
		{"no resolve", libHead("jitprof_anon.h") + "const uint32_t jitprof_anon_version = 2;\n", "lacks jitprof_anon_version, jitprof_anon_claim", ""},
	}...)
	libs := t.TempDir()
	os.Chmod(libs, 0o755)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("bad%d", i)
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
				file, line := "", 0
				if strings.Contains(tt.name, "file") {
					file, line = "a b?%.js", 7
				}
				if !ok || s.Name != "f?ok 0 1 0 g" || s.File != file || s.Line != line || err != nil {
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

// TestLibraryVersion1: a library built with version 1's header gets
// queries laid out as version 1's, a batch of them, and its host speaks
// protocol version 1.
func TestLibraryVersion1(t *testing.T) {
	installHost(t)
	libs := t.TempDir()
	os.Chmod(libs, 0o755)
	library(t, libs, "old", libBody(1, "return JITPROF_ANON_CLAIMED;",
		`for (size_t i = 0; i < n; i++) { q[i].start = q[i].addr; q[i].size = 1; q[i].gen = q[i].time; snprintf(q[i].name, q[i].name_len, "f%zu", i); } return 0;`))
	h := external1(t, "old", ExternalOptions{})
	r, err := h.Claim(&Process{PID: 1, Embedded: map[string][]byte{"/tmp/perf-1.map": []byte("1 1 x\n")}})
	if err != nil || r == nil {
		t.Fatalf("Claim = %v, %v", r, err)
	}
	qs := []Query{{0x10, 1}, {0x20, 2}, {0x30, 3}, {0x40, 4}}
	for i, s := range ResolveBatch(r, qs) {
		if s.Name != fmt.Sprintf("f%d", i) || s.Start != qs[i].Addr || s.Gen != qs[i].Time || s.File != "" {
			t.Errorf("query %d: %+v", i, s)
		}
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if v := h.(*external).version.Load(); v != 1 {
		t.Errorf("protocol version %d, want 1", v)
	}
}

// TestLibraryData: a library of version 2 is told the executable and the
// time range, and reads the process's JIT data (here the copies embedded
// in the recording) at the paths it is given, descriptors it inherited.
func TestLibraryData(t *testing.T) {
	installHost(t)
	libs := t.TempDir()
	os.Chmod(libs, 0o755)
	library(t, libs, "reader", libHead("jitprof_anon.h")+`
const uint32_t jitprof_anon_version = JITPROF_ANON_VERSION;
static char seen[4096];
int jitprof_anon_claim(const struct jitprof_anon_process *p, void **state, char *msg, size_t msg_len) {
	if (p->ndata == 0)
		return JITPROF_ANON_NOT_MINE;
	size_t k = (size_t)snprintf(seen, sizeof seen, "v%u %s %llu-%llu", p->version, p->exe, (unsigned long long)p->time_from, (unsigned long long)p->time_to);
	for (size_t i = 0; i < p->ndata && k < sizeof seen; i++) {
		const struct jitprof_anon_data *d = &p->data[i];
		char buf[64] = {0};
		FILE *f = fopen(d->path, "r");
		if (!f) {
			snprintf(msg, msg_len, "%s: cannot open", d->path);
			return JITPROF_ANON_ERROR;
		}
		size_t got = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[strcspn(buf, "\n")] = 0;
		k += (size_t)snprintf(seen + k, sizeof seen - k, " [%s %s %d %llu %zu %s]", d->kind, d->origin, d->embedded, (unsigned long long)d->size, got, buf);
	}
	*state = seen;
	return JITPROF_ANON_CLAIMED;
}
int jitprof_anon_resolve(void *state, struct jitprof_anon_query *q, size_t n, char *msg, size_t msg_len) {
	(void)msg; (void)msg_len;
	for (size_t i = 0; i < n; i++) {
		q[i].start = q[i].addr; q[i].size = 1;
		snprintf(q[i].name, q[i].name_len, "%s", (char *)state);
	}
	return 0;
}
void jitprof_anon_close(void *state) { (void)state; }
`)
	h := external1(t, "reader", ExternalOptions{})
	if r, err := h.Claim(&Process{PID: 1}); r != nil || err != nil {
		t.Errorf("Claim without data = %v, %v", r, err)
	}
	p := &Process{PID: 7, Exe: "/opt/my jit", Span: TimeRange{100, 900},
		Embedded: map[string][]byte{"/tmp/perf-7.map": []byte("1000 100 loop_a\n"), "/tmp/jit-7.dump": []byte("JiTD")},
		Kinds:    map[string]string{"/tmp/perf-7.map": "perfmap", "/tmp/jit-7.dump": "jitdump"}}
	r, err := h.Claim(p)
	if err != nil || r == nil {
		t.Fatalf("Claim = %v, %v", r, err)
	}
	s, _ := r.Resolve(0x10, 1)
	want := "v2 /opt/my jit 100-900 [jitdump /tmp/jit-7.dump 1 4 4 JiTD] [perfmap /tmp/perf-7.map 1 16 16 1000 100 loop_a]"
	if s.Name != want {
		t.Errorf("the library saw\n%s\nwant\n%s", s.Name, want)
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
