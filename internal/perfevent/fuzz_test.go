package perfevent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzParseEvent parses -e specs against a tracefs made in a temporary
// directory, never mounting: an accepted event parses again from its name
// to the same event, has at most 3 p modifiers, and a tracepoint's
// directory is in that tracefs.
func FuzzParseEvent(f *testing.F) {
	root := f.TempDir()
	for tp, id := range map[string]string{"sched/sched_switch": "316\n", "raw_syscalls/sys_enter": "22", "bad/id": "x\n"} {
		dir := filepath.Join(root, "events", tp)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "id"), []byte(id), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	roots := []string{filepath.Join(root, "missing"), root}
	for _, s := range []string{"", "cpu-clock", "task-clock:u", "cycles:ppp", "r1a2b:k", "sched:sched_switch", "sched:sched_switch:u", "bad:id", "a:b:c:d", "../x:y", "cs:ukp"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		ev, err := parseEvent(spec, roots, nil)
		if err != nil {
			return
		}
		if ev.Name != spec && (spec != "" || ev.Name != DefaultEvent) || ev.PreciseIP > 3 || ev.MountedTracefs != "" {
			t.Fatalf("%q: %+v", spec, ev)
		}
		if ev.Type == unix.PERF_TYPE_TRACEPOINT {
			if !strings.HasPrefix(ev.TracepointDir, filepath.Join(root, "events")+"/") {
				t.Fatalf("%q: tracepoint directory %s outside the tracefs", spec, ev.TracepointDir)
			}
			if id, err := os.ReadFile(filepath.Join(ev.TracepointDir, "id")); err != nil || strings.TrimSpace(string(id)) != strconv.FormatUint(ev.Config, 10) {
				t.Fatalf("%q: id %d, file says %q (%v)", spec, ev.Config, id, err)
			}
		}
		again, err := parseEvent(ev.Name, roots, nil)
		if err != nil || again != ev {
			t.Fatalf("%q parsed again: %+v, %v; want %+v", ev.Name, again, err, ev)
		}
	})
}
