package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

// arc is a caller-callee pair of functions.
type arc struct{ caller, callee string }

// sessionArcs returns the arcs of report --session -g's JSON of the
// session in dir: each function's callers, with the samples in which
// each called it.
func sessionArcs(t *testing.T, jitprof, dir string, env []string) map[arc]uint64 {
	t.Helper()
	var graph struct {
		Events []struct {
			Functions []struct {
				Symbol  string
				Callers []struct {
					Symbol  string
					Samples uint64
				}
			}
		}
	}
	out := jpReport(t, jitprof, env, "--session", "--session-dir", dir, "--anon-samples", "-g", "--format", "json")
	if err := json.Unmarshal([]byte(out), &graph); err != nil || len(graph.Events) != 1 {
		t.Fatalf("report --session -g --format json: %v, want one event:\n%s", err, out)
	}
	arcs := map[arc]uint64{}
	for _, f := range graph.Events[0].Functions {
		for _, c := range f.Callers {
			if a := (arc{foldedName(c.Symbol), foldedName(f.Symbol)}); a.caller != "[unknown]" && a.callee != "[unknown]" {
				arcs[a] += c.Samples
			}
		}
	}
	return arcs
}

// foldedName is a function's name as folded stacks spell it: spaces and
// semicolons replaced, and code no symbol names (which a session's
// report shows by its offset in the image) [unknown].
func foldedName(s string) string {
	if strings.HasPrefix(s, "0x") {
		return "[unknown]"
	}
	return strings.NewReplacer(";", ":", " ", "_").Replace(s)
}

// stackArcs counts the arcs of stacks, root first, each counted n times:
// a sample counts once in each arc of its chain, as the daemon counts
// them. Frames in no mapping ([unknown]: where a chain ran out of the
// process's code) are left out: a sample file keeps a place by its
// image, and such an address has none.
func stackArcs(arcs map[arc]uint64, frames []string, n uint64) {
	for i := 0; i+1 < len(frames); i++ {
		if frames[i] != "[unknown]" && frames[i+1] != "[unknown]" {
			arcs[arc{frames[i], frames[i+1]}] += n
		}
	}
}

// foldedArcs counts the arcs of report --format folded's stacks.
func foldedArcs(t *testing.T, folded string) map[arc]uint64 {
	t.Helper()
	arcs := map[arc]uint64{}
	for _, line := range strings.Split(strings.TrimSpace(folded), "\n") {
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseUint(line[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("folded line %q: %v", line, err)
		}
		stackArcs(arcs, strings.Split(line[:i], ";")[1:], n) // after the comm
	}
	return arcs
}

// perfScriptArcs counts the arcs of perf script's callchains.
func perfScriptArcs(t *testing.T, data string) map[arc]uint64 {
	arcs := map[arc]uint64{}
	var stack []string
	flush := func() {
		slices.Reverse(stack)
		stackArcs(arcs, stack, 1)
		stack = stack[:0]
	}
	for _, line := range strings.Split(perftest.Run(t, "perf", "script", "-i", data, "-F", "comm,ip,sym", "--no-inline"), "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] != ' ' && line[0] != '\t':
			flush() // the comm line
		default:
			_, sym, ok := strings.Cut(strings.TrimSpace(line), " ")
			if !ok {
				sym = "[unknown]"
			}
			stack = append(stack, sym)
		}
	}
	flush()
	return arcs
}

// TestImportDWARF: jitprof import of a --call-graph dwarf recording
// (jitprof's and perf's) unwinds its samples' stacks into {cg} arcs, and
// report --session -g of the session has the callers and callees, with
// the same counts, that the stacks of report -g of the recording have:
// both unwind with internal/unwind (compareArcs says where they may
// not; every run so far agreed exactly). The workload
// has no frame pointers (-O2 -fomit-frame-pointer, through libc's qsort
// into a callback), 1.5 s of CPU at 4 kHz: 6,000 samples.
//
// perf report --call-graph dwarf unwinds the same files with libdw; its
// arcs are compared within 1% of the arcs (perf's stacks, from perf
// script), as internal/report's tests compare its stacks: perf stops
// one frame short where a return address is in the copy's last 8 bytes,
// and now and then a chain short of _start.
func TestImportDWARF(t *testing.T) {
	perftest.Perf(t)
	jitprof := buildJitprof(t, t.TempDir())
	work := perftest.DWARF(t)
	for _, recorder := range []string{"jitprof", "perf"} {
		t.Run(recorder, func(t *testing.T) {
			args := []string{"--call-graph", "dwarf", "-F", "4000", "--", work, "1500"}
			var data string
			if recorder == "perf" {
				data = perftest.Record(t, "dwarf.data", args...)
			} else {
				data = filepath.Join(t.TempDir(), "dwarf.data")
				if out, err := exec.Command(jitprof, append([]string{"record", "-q", "-o", data}, args...)...).CombinedOutput(); err != nil {
					t.Fatalf("jitprof record: %v\n%s", err, out)
				}
			}
			dir := t.TempDir()
			out, err := exec.Command(jitprof, "import", "--session-dir", dir, data).CombinedOutput()
			if err != nil {
				t.Fatalf("jitprof import: %v\n%s", err, out)
			}
			session := sessionArcs(t, jitprof, dir, nil)
			if head := jpReport(t, jitprof, nil, "--session", "--session-dir", dir); !strings.Contains(head, "# DWARF call chains: ") || !strings.Contains(string(out), "call chains unwound") {
				t.Errorf("import and report --session say nothing of the chains unwound:\n%s\n%s", out, head)
			}
			total, differ := compareArcs(t, session, foldedArcs(t, jpReport(t, jitprof, nil, "-i", data, "--format", "folded")))
			if total < 20000 || session[arc{"sort_a", "__GI___qsort_r"}] < 1000 {
				t.Errorf("%d arcs in the recording's stacks, sort_a -> qsort %d in the session's: want tens of thousands, thousands", total, session[arc{"sort_a", "__GI___qsort_r"}])
			}
			t.Logf("%s: %d arcs, %d differ; %s", recorder, total, differ, strings.TrimSpace(string(out)))

			theirs := perfScriptArcs(t, data)
			var ptotal, pdiffer uint64
			for a, n := range theirs {
				ptotal += n
				if !strings.Contains(a.caller+a.callee, "@plt") {
					pdiffer += max(n, session[a]) - min(n, session[a])
				}
			}
			for a, n := range session {
				if _, ok := theirs[a]; !ok && !strings.Contains(a.caller+a.callee, "@plt") {
					pdiffer += n
				}
			}
			if ptotal == 0 || pdiffer*100 > ptotal {
				t.Errorf("%d of perf script's %d arcs differ from the session's", pdiffer, ptotal)
			}
			t.Logf("perf: %d arcs, %d differ from the session's", ptotal, pdiffer)
		})
	}
}

// compareArcs compares a session's arcs with those of a recording's
// stacks, logs each that differs, and fails when more than 0.1% of the
// recording's differ. Both unwind with internal/unwind on the same file,
// so they agree but where the ingest, as the daemon, knows less than a
// report: it counts a round's samples against the mappings of the
// rounds so far (a report knows every mapping of the file), so a sample
// whose mapping's MMAP another CPU's ring gave a round later loses the
// arcs from there on; and in JIT code it names a sample taken before its
// code was logged by the code logged first after it (a report, only
// within its skew), which may name or step through a frame differently.
func compareArcs(t *testing.T, session, recording map[arc]uint64) (total, differ uint64) {
	t.Helper()
	for a, n := range recording {
		total += n
		if session[a] != n {
			differ += max(n, session[a]) - min(n, session[a])
			t.Logf("%s -> %s: %d in the session's arcs, %d in the recording's stacks", a.caller, a.callee, session[a], n)
		}
	}
	for a, n := range session {
		if _, ok := recording[a]; !ok {
			differ += n
			t.Logf("%s -> %s: %d in the session's arcs, none in the recording's stacks", a.caller, a.callee, n)
		}
	}
	if differ*1000 > total {
		t.Errorf("%d of the recording's %d arcs differ from the session's, more than 0.1%%", differ, total)
	}
	return total, differ
}

// TestImportNodeDWARF: JIT code is unwound on import as a report unwinds
// it. Node with --perf-prof --perf-prof-unwinding-info writes a jitdump
// whose unwinding records describe its JIT code; jitprof record
// --call-graph dwarf embeds it. The session's arcs, JIT functions named
// by generation, have the counts of the arcs of report -g
// --anon-samples's stacks of the recording, through JS frames unwound by
// their records and V8's frames by their frame pointers (perf's
// agreement with the report on such recordings is TestNodeJitdumpDWARF's).
func TestImportNodeDWARF(t *testing.T) {
	perftest.Perf(t)
	node := perftest.Need(t, "node")
	jitprof := buildJitprof(t, t.TempDir())
	dir := t.TempDir()
	script := filepath.Join(dir, "hot.js")
	if err := os.WriteFile(script, []byte(nodeScript), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "perf.data")
	cmd := exec.Command(jitprof, "record", "-q", "--call-graph", "dwarf", "-F", "2000", "-o", data, "--", node, "--perf-prof", "--perf-prof-unwinding-info", script)
	cmd.Dir = dir // where node writes its jitdump
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("jitprof record: %v\n%s", err, out)
	}
	sessions := t.TempDir()
	out, err := exec.Command(jitprof, "import", "--session-dir", sessions, data).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "JIT data of 1 processes") {
		t.Fatalf("jitprof import: %v, want node's JIT data imported\n%s", err, out)
	}
	session := sessionArcs(t, jitprof, sessions, nil)
	total, differ := compareArcs(t, session, foldedArcs(t, jpReport(t, jitprof, nil, "-i", data, "--anon-samples", "--format", "folded")))
	var fib uint64
	for a, n := range session {
		if strings.HasPrefix(a.caller, "JS:*fib") && strings.HasPrefix(a.callee, "JS:*fib") {
			fib += n
		}
	}
	// Half the script's time is in fib(22), whose samples are up to 22
	// frames of it deep: a tenth of the arcs at least.
	if fib < total/10 {
		t.Errorf("fib calls fib in %d of %d arcs: the JIT code's frames were not unwound", fib, total)
	}
	t.Logf("%d arcs, %d differ, %d of fib calling itself; %s", total, differ, fib, strings.TrimSpace(string(out)))
}

// TestDaemonDWARF: the daemon started with -g dwarf unwinds the user
// stacks of what it samples as it counts them: in a session of the
// workload without frame pointers, qsort (libc, no frame pointers
// either) is called by sort_a and sort_b 3:1 as the workload calls them
// (sort_a's share 75% within 10 points), as the stacks of jitprof record
// --call-graph dwarf of the same run have it (within 5 points), and
// cmp, which only qsort's merge sort calls, has that as its caller in
// nearly all its arcs. At 1 kHz for 2.5 s of CPU about 2,000 samples
// are in qsort: one standard deviation of a share is 1 point. Other
// processes' qsort callers and cmp functions, which the daemon samples
// too, are left out by image.
func TestDaemonDWARF(t *testing.T) {
	perftest.Perf(t)
	needRoot(t, "the daemon samples every CPU")
	jitprof := buildJitprof(t, t.TempDir())
	work := perftest.DWARF(t)
	dir := filepath.Join(t.TempDir(), "sessions")
	// 2 MiB rings: 8 KiB stacks fill perf's default 512 KiB ring in
	// 64 samples.
	startDaemon(t, jitprof, dir, nil, "-a", "-F", "1000", "-m", "512", "-g", "dwarf")
	data := filepath.Join(t.TempDir(), "perf.data")
	if out, err := exec.Command(jitprof, "record", "-q", "--call-graph", "dwarf", "-F", "1000", "-m", "512", "-o", data, "--", work, "2500").CombinedOutput(); err != nil {
		t.Fatalf("jitprof record: %v\n%s", err, out)
	}
	status := daemonCmd(t, jitprof, dir, "status")
	if !strings.Contains(status, "call graph:      dwarf (8192 bytes of user stack a sample") {
		t.Errorf("status does not say the call graphs are DWARF's, 8 KiB a sample:\n%s", status)
	}
	daemonCmd(t, jitprof, dir, "dump")
	var graph struct {
		Events []struct {
			Functions []struct {
				Symbol, Image string
				Callers       []struct {
					Symbol, Image string
					Samples       uint64
				}
			}
		}
	}
	// The whole session: without --separate, qsort's arcs are in libc's
	// files, not the workload's.
	out := jpReport(t, jitprof, nil, "--session", "--session-dir", dir, "-g", "--format", "json")
	if err := json.Unmarshal([]byte(out), &graph); err != nil || len(graph.Events) != 1 {
		t.Fatalf("report --session -g --format json: %v, want one event:\n%s", err, out)
	}
	// The daemon samples every process: only the workload's functions
	// (its sorts, its cmp) are compared, and qsort's calls from them.
	mine := func(sym, image string) string {
		if image == work {
			return sym
		}
		return ""
	}
	var qa, qb, cmpAll, cmpMsort uint64
	for _, f := range graph.Events[0].Functions {
		for _, c := range f.Callers {
			switch {
			case f.Symbol == "__GI___qsort_r" && mine(c.Symbol, c.Image) == "sort_a":
				qa += c.Samples
			case f.Symbol == "__GI___qsort_r" && mine(c.Symbol, c.Image) == "sort_b":
				qb += c.Samples
			case mine(f.Symbol, f.Image) == "cmp":
				cmpAll += c.Samples
				if c.Symbol == "msort_with_tmp.part.0" {
					cmpMsort += c.Samples
				}
			}
		}
	}
	a := 100 * float64(qa) / float64(max(qa+qb, 1))
	if qa+qb < 1000 {
		t.Fatalf("qsort has %d arcs from sort_a and sort_b in the session, want thousands\ndaemon status:\n%s", qa+qb, status)
	}
	if math.Abs(a-75) > 10 {
		t.Errorf("qsort's callers in the session: sort_a %.1f%% of %d arcs from sort_a and sort_b, want 75%%", a, qa+qb)
	}
	if s := 100 * float64(cmpMsort) / float64(max(cmpAll, 1)); s < 95 {
		t.Errorf("cmp's callers: msort_with_tmp in %.1f%% of %d arcs, want all but a few", s, cmpAll)
	}
	rec := foldedArcs(t, jpReport(t, jitprof, nil, "-i", data, "--format", "folded"))
	ra, rb := rec[arc{"sort_a", "__GI___qsort_r"}], rec[arc{"sort_b", "__GI___qsort_r"}]
	r := 100 * float64(ra) / float64(max(ra+rb, 1))
	if math.Abs(a-r) > 5 {
		t.Errorf("sort_a calls qsort in %.1f%% of the session's arcs, in %.1f%% of the recording's stacks", a, r)
	}
	t.Logf("qsort: %d arcs from sort_a and sort_b, sort_a %.1f%% (recording %.1f%% of %d); cmp: %d of %d arcs from msort_with_tmp\n%s", qa+qb, a, r, ra+rb, cmpMsort, cmpAll, status)
}
