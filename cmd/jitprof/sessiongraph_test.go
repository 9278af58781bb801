package main

import (
	"encoding/json"
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/sampledb"
)

// TestDaemonCallGraph: a session the daemon recorded with -g reports
// spin's callers as the workload calls it, call_a three times for each
// call_b (75% and 25%, within 10 points), and as jitprof record -g of
// the same run has them in its stacks (within 5 points). Each sampling
// has some 8,000 samples of spin at 4 kHz for about 2 s: one standard
// deviation of a share is 0.5 points.
func TestDaemonCallGraph(t *testing.T) {
	perftest.Perf(t)
	needRoot(t, "the daemon samples every CPU")
	jitprof, _ := buildTools(t)
	calls := perftest.Calls(t)
	dir := filepath.Join(t.TempDir(), "sessions")
	startDaemon(t, jitprof, dir, nil, "-a", "-F", "4000", "-g")
	data := filepath.Join(t.TempDir(), "perf.data")
	if out, err := exec.Command(jitprof, "record", "-q", "-g", "-F", "4000", "-o", data, "--", calls, "2500").CombinedOutput(); err != nil {
		t.Fatalf("jitprof record: %v\n%s", err, out)
	}
	daemonCmd(t, jitprof, dir, "dump")

	var graph struct {
		Events []struct {
			Functions []struct {
				Symbol, Image string
				Samples       uint64
				Callers       []struct {
					Symbol  string
					Samples uint64
					Percent float64
				}
			}
		}
	}
	out := jpReport(t, jitprof, nil, "--session", "--session-dir", dir, "-g", "--format", "json", "image:"+calls)
	if err := json.Unmarshal([]byte(out), &graph); err != nil {
		t.Fatalf("report --session -g --format json: %v\n%s", err, out)
	}
	if len(graph.Events) != 1 {
		t.Fatalf("%d events, want 1:\n%s", len(graph.Events), out)
	}
	session := map[string]float64{}
	var spinSelf, spinCalled uint64
	for _, f := range graph.Events[0].Functions {
		if f.Symbol != "spin" {
			continue
		}
		spinSelf = f.Samples
		for _, c := range f.Callers {
			session[c.Symbol] = c.Percent
			spinCalled += c.Samples
		}
	}
	if spinSelf < 2000 {
		t.Fatalf("spin has %d samples in the session, want thousands:\n%s", spinSelf, out)
	}
	for sym, want := range map[string]float64{"call_a": 75, "call_b": 25} {
		if math.Abs(session[sym]-want) > 10 {
			t.Errorf("%s calls spin in %.2f%% of the session's arcs into it, want %.0f%% (all: %v)", sym, session[sym], want, session)
		}
	}

	// jitprof record -g: spin's parent in each folded stack.
	recorded := map[string]uint64{}
	var recTotal uint64
	for _, line := range strings.Split(strings.TrimSpace(jpReport(t, jitprof, nil, "-i", data, "--format", "folded")), "\n") {
		stack, count, ok := strings.Cut(line[strings.LastIndexByte(line, ' ')+1:]+" "+line[:strings.LastIndexByte(line, ' ')], " ")
		frames := strings.Split(count, ";")
		if !ok || len(frames) < 2 || frames[len(frames)-1] != "spin" {
			continue
		}
		n, err := strconv.ParseUint(stack, 10, 64)
		if err != nil {
			t.Fatalf("folded line %q: %v", line, err)
		}
		recorded[frames[len(frames)-2]] += n
		recTotal += n
	}
	if recTotal < 2000 {
		t.Fatalf("spin has %d samples in the recording, want thousands", recTotal)
	}
	for _, sym := range []string{"call_a", "call_b"} {
		rec := 100 * float64(recorded[sym]) / float64(recTotal)
		if math.Abs(session[sym]-rec) > 5 {
			t.Errorf("%s calls spin in %.2f%% of the session's arcs, in %.2f%% of the recording's stacks", sym, session[sym], rec)
		}
	}
	t.Logf("spin: %d samples, %d in arcs from its callers; call_a %.2f%% (recording %.2f%%), call_b %.2f%% (recording %.2f%%)",
		spinSelf, spinCalled, session["call_a"], 100*float64(recorded["call_a"])/float64(recTotal),
		session["call_b"], 100*float64(recorded["call_b"])/float64(recTotal))
}

// TestSessionGraphRefused: report --session -g says what it cannot do
// instead of printing something else: a session without call-graph
// files (a daemon started without -g), a format that needs stacks.
func TestSessionGraphRefused(t *testing.T) {
	jitprof, _ := buildTools(t)
	dir := t.TempDir()
	db, err := sampledb.Create(dir, sampledb.Options{Events: []sampledb.Event{{Name: "cpu-clock", Count: 1000, Freq: true}}})
	if err != nil {
		t.Fatal(err)
	}
	app, err := db.FileImage(sampledb.FileIdent{}, "/bin/true", sampledb.ImageInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Add(&sampledb.Sample{App: app, Image: app, Key1: 0x10}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-g"}, "daemon start -g"},
		{[]string{"-g", "--format", "pprof", "-o", filepath.Join(t.TempDir(), "x.pb.gz")}, "text or json, not pprof"},
		{[]string{"-g", "--format", "folded"}, "text or json, not folded"},
		{[]string{"-g", "--sort", "pid,sym"}, "by function"},
		{[]string{"-g", "--pid", "1"}, "profile specification"},
	} {
		out, err := exec.Command(jitprof, append([]string{"report", "--session", "--session-dir", dir}, c.args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("report --session %s: %v, %s; want an error saying %q", strings.Join(c.args, " "), err, out, c.want)
		}
	}
	// Without -g the same session reports its flat samples.
	if out, err := exec.Command(jitprof, "report", "--session", "--session-dir", dir).CombinedOutput(); err != nil || !strings.Contains(string(out), "/bin/true") {
		t.Errorf("report --session: %v\n%s", err, out)
	}
}
