package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

// TestAnonHandlerLibrary: a JIT whose symbols only a handler library
// (examples/anonhandler-so, run by jitprof-anon-host found beside jitprof)
// understands is recorded, and report --anon-handler=NAME names its code;
// a library that crashes in resolve leaves a complete report that says so.
func TestAnonHandlerLibrary(t *testing.T) {
	perftest.Perf(t)
	jit := perftest.AnonJIT(t)
	jitprof, _ := buildTools(t)
	bin := filepath.Dir(jitprof)
	os.Chmod(bin, 0o755)
	if out, err := exec.Command(perftest.Need(t, "make"), "-s", "-C", "../../agent", "OUT="+bin, bin+"/jitprof-anon-host").CombinedOutput(); err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	libs := t.TempDir()
	os.Chmod(libs, 0o755)
	build := func(name, src string) {
		if out, err := exec.Command("gcc", "-shared", "-fPIC", "-I../../agent", "-o", filepath.Join(libs, "lib"+name+".so"), src).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, out)
		}
	}
	build("jitprof-anon-toy", "../../examples/anonhandler-so/example.c")
	crash := filepath.Join(t.TempDir(), "crash.c")
	os.WriteFile(crash, []byte(`#include <stdlib.h>
#include "jitprof_anon.h"
const uint32_t jitprof_anon_version = JITPROF_ANON_VERSION;
int jitprof_anon_claim(const struct jitprof_anon_process *p, void **s, char *m, size_t n) { (void)p; (void)s; (void)m; (void)n; return JITPROF_ANON_CLAIMED; }
int jitprof_anon_resolve(void *s, struct jitprof_anon_query *q, size_t n, char *m, size_t l) { (void)s; (void)q; (void)n; (void)m; (void)l; abort(); }
void jitprof_anon_close(void *s) { (void)s; }
`), 0o644)
	build("crashy", crash)

	dir := t.TempDir()
	data := filepath.Join(dir, "perf.data")
	rec := exec.Command(jitprof, "record", "-q", "-o", data, "--", jit, "1")
	out, err := rec.Output()
	if err != nil {
		t.Fatalf("jitprof record: %v\n%s", err, out)
	}
	// The JIT's symbol file, in the format the library reads: the JIT
	// said where its code is.
	var pid int
	var addr uint64
	for sc := bufio.NewScanner(strings.NewReader(string(out))); sc.Scan(); {
		if _, err := fmt.Sscanf(sc.Text(), "ready %d %v", &pid, &addr); err == nil {
			break
		}
	}
	if pid == 0 {
		t.Fatalf("the JIT did not say where its code is: %q", out)
	}
	syms := t.TempDir()
	os.WriteFile(filepath.Join(syms, fmt.Sprintf("jitsyms-%d.txt", pid)), fmt.Appendf(nil, "jit_spin %x 9 /src/spin.toy 42\n", addr), 0o644)

	report := func(handler string, args ...string) (string, string) {
		cmd := exec.Command(jitprof, append([]string{"report", "-i", data, "--anon-samples", "-l", "--anon-handler", handler}, args...)...)
		cmd.Env = append(os.Environ(), "JITPROF_ANON_PATH="+libs, "ANONHANDLER_DIR="+syms)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("report --anon-handler %s: %v\n%s", handler, err, stderr.String())
		}
		return string(out), stderr.String()
	}
	out2, stderr := report("toy")
	if !strings.Contains(out2, "jit_spin") || !strings.Contains(stderr, "named by toy from "+filepath.Join(libs, "libjitprof-anon-toy.so")) {
		t.Errorf("the library's names are not in the report:\n%s\n%s", out2, stderr)
	}
	// The library gives source positions (interface version 2), shown
	// where the report shows lines.
	if out, _ := report("toy", "--sort", "sym,srcline"); !strings.Contains(out, "/src/spin.toy:42") {
		t.Errorf("the library's source line is not in the report:\n%s", out)
	}
	// After a built-in with no data for the JIT, the library claims it.
	if out, stderr := report("perfmap,jitdump,toy"); !strings.Contains(out, "jit_spin") {
		t.Errorf("built-ins, then the library:\n%s\n%s", out, stderr)
	}
	out3, stderr := report("crashy,toy")
	if strings.Contains(out3, "jit_spin") || !strings.Contains(stderr, "libcrashy.so: resolve: exited before answering (signal: aborted)") {
		t.Errorf("a library crashing in resolve:\n%s\n%s", out3, stderr)
	}
	if !strings.Contains(out3, "# event:") {
		t.Errorf("no report after the crash:\n%s", out3)
	}
	// A handler of protocol 2 is told the recording's time range: its
	// first and last samples' times, which the report's header shows.
	hlog := filepath.Join(t.TempDir(), "handler.log")
	script := filepath.Join(bin, "jitprof-anon-v2log")
	os.WriteFile(script, fmt.Appendf(nil, `#!/bin/sh
while read -r line; do
	echo "$line" >>%s
	case "$line" in
	claim*) echo "protocol 2" ;;
	end) echo no ;;
	quit) exit 0 ;;
	esac
done
`, hlog), 0o755)
	out4, _ := report(script, "--sort", "dso")
	logged, _ := os.ReadFile(hlog)
	var from, to float64
	var span0, span1 float64
	if _, err := fmt.Sscanf(headerLine(out4, "# time span:"), "# time span: %fs (%f to %f)", new(float64), &span0, &span1); err != nil {
		t.Fatalf("no time span in the report: %v\n%s", err, out4)
	}
	for _, line := range strings.Split(string(logged), "\n") {
		if _, err := fmt.Sscanf(line, "range %f %f", &from, &to); err == nil {
			break
		}
	}
	secs := func(ns float64) string { return fmt.Sprintf("%.6f", ns/1e9) }
	if from == 0 || secs(from) != fmt.Sprintf("%.6f", span0) || secs(to) != fmt.Sprintf("%.6f", span1) {
		t.Errorf("the handler was told the range %.0f to %.0f, the report's span is %.6f to %.6f; it heard:\n%s", from, to, span0, span1, logged)
	}
}

// headerLine returns the line of a report that starts with prefix.
func headerLine(report, prefix string) string {
	for _, l := range strings.Split(report, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
