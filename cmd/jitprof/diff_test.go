package main

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/jitprof/jitprof/internal/perftest"
)

// splitSource is a C workload whose CPU time splits between work_a and
// work_b as its arguments say: percent of work_a, then CPU seconds in
// all. It works in turns of 10 ms of CPU, so any run has the split it
// asks for to within a turn, however loaded the machine.
const splitSource = `#include <stdlib.h>
#include <time.h>
static volatile double sink;
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; }
__attribute__((noinline)) void work_a(double until) { while (cpu() < until) for (int i = 0; i < 10000; i++) sink += i * 0.5; }
__attribute__((noinline)) void work_b(double until) { while (cpu() < until) for (int i = 0; i < 10000; i++) sink += i * 0.25 + 1; }
int main(int argc, char **argv) {
	double a = atof(argv[1]) / 100, secs = atof(argv[2]), start = cpu();
	while (cpu() - start < secs) {
		double t = cpu();
		work_a(t + 0.01 * a);
		work_b(t + 0.01);
	}
	return 0;
}
`

// buildC builds a C source into dir and returns the executable's path.
func buildC(t *testing.T, dir, name, src string) string {
	t.Helper()
	cc := perftest.Need(t, "gcc")
	c := filepath.Join(dir, name+".c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	runOK(t, cc, "-O1", "-g", "-fno-omit-frame-pointer", "-o", bin, c)
	return bin
}

// diffRow is a row of a comparison: the baseline's share and the delta,
// in points; hasBase says the baseline has the row.
type diffRow struct {
	base, delta float64
	hasBase     bool
}

// perfDiffRows parses perf diff -t ';': Baseline;Delta Abs;Shared
// Object;Symbol, by "dso sym". A row the new file lacks has no delta in
// perf's output: it went down by its whole share.
func perfDiffRows(t *testing.T, out string) map[string]diffRow {
	t.Helper()
	rows := map[string]diffRow{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, ";")
		if strings.HasPrefix(line, "#") || len(f) != 4 {
			continue
		}
		var r diffRow
		if s := strings.TrimSpace(f[0]); s != "" {
			r.base, r.hasBase = mustFloat(t, strings.TrimSuffix(s, "%")), true
		}
		if s := strings.TrimSpace(f[1]); s != "" {
			r.delta = mustFloat(t, strings.TrimSuffix(s, "%"))
		} else {
			r.delta = -r.base
		}
		rows[strings.TrimSpace(f[2])+" "+strings.TrimSpace(f[3])] = r
	}
	return rows
}

// jitprofDiffRows parses jitprof diff --format csv (-c delta or
// delta-abs), by "dso sym".
func jitprofDiffRows(t *testing.T, out string) map[string]diffRow {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("jitprof diff --format csv: %v\n%s", err, out)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	rows := map[string]diffRow{}
	for _, r := range recs[1:] {
		d := diffRow{base: mustFloat(t, r[col["percent_0"]]), delta: mustFloat(t, r[col["delta-abs_1"]])}
		d.hasBase = r[col["samples_0"]] != "0"
		rows[r[col["dso"]]+" "+r[col["level"]]+" "+r[col["sym"]]] = d
	}
	return rows
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

// TestDiffAgreesWithPerf: on two recordings perf made of one program
// whose split changed, jitprof diff has perf diff's rows, with the same
// baseline shares and deltas to 0.1 points (both print two decimals;
// the files are the same, so only rounding may differ).
func TestDiffAgreesWithPerf(t *testing.T) {
	perf := perftest.Perf(t)
	dir := t.TempDir()
	split := buildC(t, dir, "split", splitSource)
	jitprof := buildJitprof(t, dir)
	// 0.8 s of CPU at 4 kHz: about 3,200 samples each.
	base := perftest.Record(t, "base.data", "-F", "4000", "--", split, "70", "0.8")
	cur := perftest.Record(t, "new.data", "-F", "4000", "--", split, "30", "0.8")
	theirs := perfDiffRows(t, runOK(t, perf, "diff", "-t", ";", base, cur))
	ours := jitprofDiffRows(t, runOK(t, jitprof, "diff", "--format", "csv", base, cur))
	for _, c := range []struct {
		row   string
		delta float64 // about: the split moved 40 points
	}{{"split [.] work_a", -40}, {"split [.] work_b", 40}} {
		if r := theirs[c.row]; math.Abs(r.delta-c.delta) > 10 {
			t.Errorf("perf diff: %s moved %.2f points, want about %v: the workload did not run as asked", c.row, r.delta, c.delta)
		}
	}
	// Rows of 0.5% or more on either side are compared: below that a
	// kernel symbol of a sample or two may be named otherwise by the
	// two kallsyms readers (perf's, at its start; ours, cached per boot).
	big := func(r diffRow) bool { return r.base >= 0.5 || r.base+r.delta >= 0.5 }
	for k, p := range theirs {
		if !big(p) {
			continue
		}
		o, ok := ours[k]
		if !ok {
			t.Errorf("perf diff has %s (%.2f%%, %+.2f), jitprof diff does not", k, p.base, p.delta)
			continue
		}
		if o.hasBase != p.hasBase || math.Abs(o.base-p.base) > 0.1 || math.Abs(o.delta-p.delta) > 0.1 {
			t.Errorf("%s: jitprof %.2f%% %+.2f, perf %.2f%% %+.2f", k, o.base, o.delta, p.base, p.delta)
		}
	}
	for k, o := range ours {
		if _, ok := theirs[k]; !ok && big(o) {
			t.Errorf("jitprof diff has %s (%.2f%%, %+.2f), perf diff does not", k, o.base, o.delta)
		}
	}
	// The text output is perf's table, sorted by the size of the delta.
	text := runOK(t, jitprof, "diff", base, cur)
	if !regexp.MustCompile(`(?m)^# Baseline  Delta Abs  Shared Object +Symbol$`).MatchString(text) {
		t.Errorf("jitprof diff's title line is not perf diff's:\n%s", text)
	}
	a, b := strings.Index(text, "[.] work_a"), strings.Index(text, "[.] work_b")
	if a < 0 || b < 0 {
		t.Errorf("jitprof diff lists no work_a or work_b:\n%s", text)
	}
}

// TestDiffJIT: minijit run twice, the second time with its generations
// numbered otherwise (--prelude) and, as every run, at other addresses.
// jitprof diff matches each function's code across the runs by its
// name without [gen N] and says so; its delta is the change of a split
// both runs were asked for alike, so it is within the counting error of
// zero. With --exact-names no generation of one run matches the other.
// The pprof, html and web forms of the comparison agree.
func TestDiffJIT(t *testing.T) {
	perftest.Perf(t)
	jitprof, minijit := buildTools(t)
	base, env, _ := runMinijit(t, jitprof, minijit)
	cur, env2, _ := runMinijit(t, jitprof, minijit, "-prelude", "7")
	env = append(env, env2...)

	out := runOKEnv(t, env, jitprof, "diff", "--anon-samples", "--format", "json", base, cur)
	var res struct {
		Rules  []string
		Events []struct {
			Samples []uint64
			Rows    []struct {
				Keys      map[string]string
				MatchedBy []string `json:"matched_by"`
				Files     []struct {
					Present bool
					Samples uint64
					Percent float64
					Value   *float64
					Names   []string
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res.Events) != 1 || strings.Join(res.Rules, ",") != "gen" {
		t.Fatalf("events %d, rules %q; want one event matched by gen", len(res.Events), res.Rules)
	}
	ev := res.Events[0]
	seen := map[string]bool{}
	for _, r := range ev.Rows {
		if !strings.HasPrefix(r.Keys["dso"], "[JIT jitlog]") {
			continue
		}
		name := r.Keys["sym"]
		seen[name] = true
		if strings.Join(r.MatchedBy, ",") != "gen" || !r.Files[0].Present || !r.Files[1].Present {
			t.Errorf("%s: matched by %q, in the runs %v, %v; want gen, both", name, r.MatchedBy, r.Files[0].Present, r.Files[1].Present)
			continue
		}
		// The generations each run gave it: other numbers in each.
		if n0, n1 := r.Files[0].Names, r.Files[1].Names; len(n0) == 0 || len(n1) == 0 || strings.Join(n0, ",") == strings.Join(n1, ",") {
			t.Errorf("%s: generations %q and %q, want other numbers in each run", name, n0, n1)
		}
		// Four standard deviations of the difference of two shares
		// counted from independent samples: sqrt(p(1-p)(1/n0+1/n1)).
		p := r.Files[0].Percent / 100
		sd := 100 * math.Sqrt(p*(1-p)*(1/float64(ev.Samples[0])+1/float64(ev.Samples[1])))
		if d := *r.Files[1].Value; math.Abs(d) > 4*sd+0.5 {
			t.Errorf("%s: %.2f%% -> %+.2f points, more than 4 standard deviations (%.2f) of no change", name, r.Files[0].Percent, d, sd)
		}
	}
	for _, fn := range []string{"fib", "collatz", "sum_squares", "xorshift"} {
		if !seen[fn] {
			t.Errorf("no row for %s matched across the runs:\n%s", fn, out)
		}
	}

	exact := runOKEnv(t, env, jitprof, "diff", "--anon-samples", "--exact-names", "--format", "csv", base, cur)
	recs, err := csv.NewReader(strings.NewReader(exact)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, r := range recs[1:] {
		if sym := r[col["sym"]]; strings.Contains(sym, "[gen ") && r[col["samples_0"]] != "0" && r[col["samples_1"]] != "0" {
			t.Errorf("--exact-names: %s has samples in both runs", sym)
		}
	}

	// pprof: the new run's samples, and the base's negated.
	pb := filepath.Join(t.TempDir(), "diff.pb.gz")
	runOKEnv(t, env, jitprof, "diff", "--anon-samples", "--format", "pprof", "--output", pb, base, cur)
	checkDiffPprof(t, readPprof(t, pb), "fib")

	// html: a differential flame graph.
	html := runOKEnv(t, env, jitprof, "diff", "--anon-samples", "--format", "html", base, cur)
	if !strings.Contains(html, `"base":`) || !strings.Contains(html, "compared with "+base) {
		t.Error("the html comparison is not a differential flame graph of the two runs")
	}

	// jitprof web --diff-base: pprof's views of the same comparison,
	// as its download serves it.
	url, stderr := startWeb(t, jitprof, env, "-i", cur, "--anon-samples", "--diff-base", base)
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "compared with "+base) {
		t.Errorf("jitprof web --diff-base does not say what it compares with\n%s", stderr())
	}
	addr, _, _ := strings.Cut(url, "?")
	resp, err = client.Get(addr + "ui/all/download")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	wp, err := profile.Parse(resp.Body)
	if err != nil {
		t.Fatalf("jitprof web --diff-base's download: %v\n%s", err, stderr())
	}
	checkDiffPprof(t, wp, "fib")
}

// checkDiffPprof checks a comparison as pprof -diff_base makes it: base
// samples labelled pprof::base and negative, the others positive, and
// the JIT function fn one function with samples on both sides.
func checkDiffPprof(t *testing.T, p *profile.Profile, fn string) {
	t.Helper()
	var base, cur int64
	for _, s := range p.Sample {
		if s.DiffBaseSample() != (s.Value[0] < 0) && s.Value[0] != 0 {
			t.Errorf("a sample labelled base=%v has %d samples", s.DiffBaseSample(), s.Value[0])
		}
		if s.Location[0].Line[0].Function.Name != fn {
			continue
		}
		if s.DiffBaseSample() {
			base -= s.Value[0]
		} else {
			cur += s.Value[0]
		}
	}
	if base == 0 || cur == 0 {
		t.Errorf("%s has %d samples in the base, %d in the new profile; want both", fn, base, cur)
	}
}

func readPprof(t *testing.T, path string) *profile.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runOKEnv is runOK with an environment.
func runOKEnv(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// TestDiffSession: a daemon's session on either side of a comparison,
// as session:NAME, gives the rows of the recording it was imported
// from: the same samples of each function. (Their shares may differ: an
// import leaves out samples in the vDSO, which the workload's clock
// reads are, and says so.)
func TestDiffSession(t *testing.T) {
	perftest.Perf(t)
	dir := t.TempDir()
	split := buildC(t, dir, "split", splitSource)
	jitprof := buildJitprof(t, dir)
	base := perftest.Record(t, "base.data", "-F", "4000", "--", split, "70", "0.5")
	cur := perftest.Record(t, "new.data", "-F", "4000", "--", split, "30", "0.5")
	sessions := filepath.Join(dir, "sessions")
	runOK(t, jitprof, "import", "--session-dir", sessions, "--session", "monday", base)
	runOK(t, jitprof, "import", "--session-dir", sessions, "--session", "tuesday", cur)
	samples := func(out string) map[string][2]string {
		recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil || len(recs) == 0 {
			t.Fatalf("%v\n%s", err, out)
		}
		col := map[string]int{}
		for i, h := range recs[0] {
			col[h] = i
		}
		m := map[string][2]string{}
		for _, r := range recs[1:] {
			m[r[col["sym"]]] = [2]string{r[col["samples_0"]], r[col["samples_1"]]}
		}
		return m
	}
	want := samples(runOK(t, jitprof, "diff", "--format", "csv", base, cur))
	for _, args := range [][]string{{"session:monday", cur}, {base, "session:tuesday"}, {"session:monday", "session:tuesday"}} {
		got := samples(runOK(t, jitprof, append([]string{"diff", "--format", "csv", "--session-dir", sessions}, args...)...))
		for _, fn := range []string{"work_a", "work_b"} {
			if got[fn] != want[fn] || want[fn][0] == "0" || want[fn][1] == "0" {
				t.Errorf("diff %q: %s has samples %q, the recordings %q", args, fn, got[fn], want[fn])
			}
		}
	}
}

func TestDiffUsage(t *testing.T) {
	jitprof := buildJitprof(t, t.TempDir())
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-c", "wdiff:1", "a", "b"}, "want wdiff:W1,W2"},
		{[]string{"-o", "2", "a", "b"}, "-o 2: sort by 0 (the baseline) to 1"},
		{[]string{"--format", "folded", "a", "b"}, "folded"},
		{[]string{"--session", "a", "b"}, "session:NAME"},
		{[]string{"--format", "pprof", "a", "b", "c"}, "compares the baseline with one profile, not 2"},
	} {
		cmd := exec.Command(jitprof, append([]string{"diff"}, c.args...)...)
		out, err := cmd.CombinedOutput()
		if code := exitCode(err); code == 0 || !strings.Contains(string(out), c.msg) {
			t.Errorf("jitprof diff %q: exit %d, want a failure saying %q:\n%s", c.args, code, c.msg, out)
		}
	}
}
