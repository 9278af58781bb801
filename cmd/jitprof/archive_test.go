package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

// libc is where Debian's C library is, as recordings name it.
const libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"

// TestArchiveElsewhere: jitprof archive packs a recording (and
// daemon save --archive a session) so that on another machine report,
// annotate and diff of the archive print what they printed here. The
// other machine is a mount namespace where the workload, its sources,
// the recordings and the JIT's logs are gone (a tmpfs over their
// directory), the debug files are gone, /proc/kallsyms reads empty and
// libc is another file: a report of the recording itself there differs,
// one of its archive must not.
func TestArchiveElsewhere(t *testing.T) {
	perftest.Perf(t)
	unshare := perftest.Need(t, "unshare")
	if os.Geteuid() != 0 {
		t.Skip("a mount namespace of one's own needs root")
	}
	if _, err := os.Stat(libc); err != nil {
		t.Skipf("no %s to hide: %v", libc, err)
	}
	hidden, kept := t.TempDir(), t.TempDir()
	jitprof := buildJitprof(t, hidden)
	minijit := builtCopy(t, "minijit", hidden)
	// The jitprof of the other machine links no libc: this one's is
	// replaced there.
	static := filepath.Join(kept, "jitprof")
	cmd := exec.Command("go", "build", "-o", static, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	split := buildC(t, hidden, "split", splitSource)
	env := append(os.Environ(), "JITPROF_JITLOG_DIR="+filepath.Join(hidden, "jitlog"))
	rec := func(name string, args ...string) string {
		out := filepath.Join(hidden, name)
		runOKEnv(t, env, jitprof, append([]string{"record", "-q", "-g", "-o", out, "--"}, args...)...)
		return out
	}
	native, native2 := rec("split.data", split, "70", "0.6"), rec("split2.data", split, "30", "0.6")
	jit := rec("minijit.data", minijit, "-duration", "1s", "-quiet")
	sessions := filepath.Join(hidden, "sessions")
	runOK(t, jitprof, "import", "--session-dir", sessions, native)

	archives := map[string]string{}
	for _, data := range []string{native, native2, jit} {
		out := filepath.Join(kept, filepath.Base(data)+".tgz")
		cmd := exec.Command(jitprof, "archive", "-o", out, data)
		cmd.Env = env
		msg, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(msg), "not archived") {
			t.Fatalf("jitprof archive %s: %v\n%s", data, err, msg)
		}
		archives[data] = out
	}
	cmd = exec.Command(jitprof, "daemon", "save", "monday", "--archive", "--session-dir", sessions)
	cmd.Dir = kept
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("daemon save --archive: %v\n%s", err, out)
	}
	session := filepath.Join(kept, "monday.jitprof.tar.gz")

	// What each command prints here, of the recording, and what it is
	// to print there, of the archive.
	type check struct {
		name        string
		here, there []string
	}
	checks := []check{
		{"report", []string{"report", "-i", native, "-l"}, []string{"report", "--archive", archives[native], "-l"}},
		{"callgraph", []string{"report", "-i", native, "-g", "-s", "sym"}, []string{"report", "--archive", archives[native], "-g", "-s", "sym"}},
		{"annotate", []string{"annotate", "-i", native}, []string{"annotate", "--archive", archives[native]}},
		{"jit report", []string{"report", "-i", jit, "-l", "--anon-samples"}, []string{"report", "--archive", archives[jit], "-l", "--anon-samples"}},
		{"jit annotate", []string{"annotate", "-i", jit, "--anon-samples"}, []string{"annotate", "--archive", archives[jit], "--anon-samples"}},
		{"diff", []string{"diff", "--format", "csv", native, native2}, []string{"diff", "--format", "csv", "archive:" + archives[native], "archive:" + archives[native2]}},
		{"session", []string{"report", "--session-dir", sessions, "--session=monday", "-l"}, []string{"report", "--archive", session, "-l"}},
		// The session's sample files keep each sample's offset, as
		// opannotate reads them; the session is the recording imported.
		{"session annotate", []string{"annotate", "-i", native, "--dso", "split"}, []string{"annotate", "--archive", session, "--dso", "split"}},
	}
	var script strings.Builder
	script.WriteString("set -e\n")
	for _, m := range [][]string{
		{"-t", "tmpfs", "none", hidden},
		{"-t", "tmpfs", "none", "/usr/lib/debug"},
		{"--bind", "/dev/null", "/proc/kallsyms"},
		{"--bind", filepath.Join(kept, "not-libc"), libc}, // last: later commands could not start
	} {
		if _, err := os.Stat(m[len(m)-1]); err != nil {
			continue // no debug files to hide
		}
		script.WriteString("mount " + strings.Join(m, " ") + "\n")
	}
	copyFile(t, "/bin/true", filepath.Join(kept, "not-libc"))
	copyFile(t, native, filepath.Join(kept, "control.data"))
	quote := func(args []string) string {
		q := make([]string, len(args))
		for i, a := range args {
			q[i] = "'" + a + "'"
		}
		return strings.Join(q, " ")
	}
	for i, c := range checks {
		script.WriteString(static + " " + quote(c.there) + " > " + filepath.Join(kept, "out"+string(rune('a'+i))) + " 2>/dev/null\n")
	}
	// The control: the recording itself, read with this namespace's
	// files.
	script.WriteString(static + " report -i " + filepath.Join(kept, "control.data") + " -l > " + filepath.Join(kept, "control") + " 2>&1 || true\n")
	sh := exec.Command(unshare, "-m", "--propagation", "private", "sh", "-c", script.String())
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("in a mount namespace: %v\n%s\nscript:\n%s", err, out, script.String())
	}
	for i, c := range checks {
		want := runOKEnv(t, env, jitprof, c.here...)
		got, err := os.ReadFile(filepath.Join(kept, "out"+string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s: the archive's output there differs from the recording's here:\n%s", c.name, diffText(want, string(got)))
		}
		if len(want) < 200 {
			t.Errorf("%s: hardly any output to compare:\n%s", c.name, want)
		}
	}
	control, _ := os.ReadFile(filepath.Join(kept, "control"))
	if want := runOK(t, jitprof, "report", "-i", native, "-l"); string(control) == want {
		t.Error("the recording itself reports the same in the namespace: it hides nothing")
	}
}
