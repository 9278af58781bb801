package main

import (
	"bufio"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/perfdata"
)

// nodeScript runs its hot loop for 1.5 s of the process's CPU time, not
// of the clock: on a loaded machine a clock-bound loop gets a fraction of
// its samples while node's start-up keeps all of its own, and the shares
// the tests compare (start-up's frames, which perf unwinds less far than
// jitprof) move with the load.
const nodeScript = `function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function mix(n) { let s = 0; for (let i = 0; i < n; i++) s = (s * 31 + i) % 1000003; return s; }
function cpuMs() { const u = process.cpuUsage(); return (u.user + u.system) / 1000; }
function main() {
  const end = cpuMs() + 1500;
  let x = 0;
  while (cpuMs() < end) { x += fib(22); x += mix(30000); }
  return x;
}
console.log(main());
`

var (
	rowRe = regexp.MustCompile(`^\s*([0-9.]+)%\s+(?:\d+\s+)?(.*)$`)
	// A generation, or the address a perf map's name repeated at several
	// addresses carries.
	genRe = regexp.MustCompile(` \[(gen \d+|0x[0-9a-f]+)\]$`)
)

// symShares parses "--stdio --sort sym -q"-style rows (perf's or ours)
// into percent by symbol name, generations (and copies) merged.
func symShares(out string) map[string]float64 {
	m := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		mm := rowRe.FindStringSubmatch(line)
		if mm == nil {
			continue
		}
		pc, _ := strconv.ParseFloat(mm[1], 64)
		name := strings.TrimSpace(mm[2])
		name = strings.TrimPrefix(strings.TrimPrefix(name, "[.] "), "[k] ")
		m[genRe.ReplaceAllString(name, "")] += pc
	}
	return m
}

// compareJS checks that every JS function with at least 2% in either
// report has the same share in both, within 1 point.
func compareJS(t *testing.T, what string, ours, perfs map[string]float64) {
	t.Helper()
	js := 0
	for name := range merge(ours, perfs) {
		if !strings.HasPrefix(name, "JS:") || math.Max(ours[name], perfs[name]) < 2 {
			continue
		}
		js++
		if math.Abs(ours[name]-perfs[name]) > 1 {
			t.Errorf("%s: %s: jitprof %.2f%%, perf %.2f%%", what, name, ours[name], perfs[name])
		}
	}
	if js < 2 {
		t.Errorf("%s: %d JS functions over 2%% (want fib and mix):\njitprof %v\nperf %v", what, js, ours, perfs)
	}
}

func merge(a, b map[string]float64) map[string]bool {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

func runNode(t *testing.T, dir string, perfArgs []string, nodeArgs ...string) string {
	t.Helper()
	node := perftest.Need(t, "node")
	script := filepath.Join(dir, "hot.js")
	if err := os.WriteFile(script, []byte(nodeScript), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "perf.data")
	args := append(append([]string{"record", "-q", "-g", "-o", data}, perfArgs...), "--", node)
	args = append(append(args, nodeArgs...), script)
	cmd := exec.Command(perftest.Perf(t), args...)
	cmd.Dir = dir // node --perf-prof writes jit-PID.dump in its working directory
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("perf %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return data
}

// TestNodePerfMap: Node with --perf-basic-prof writes /tmp/perf-PID.map;
// jitprof must name its hot JS functions with perf report's percentages
// on the same recording, and show them in callgraphs and pprof.
func TestNodePerfMap(t *testing.T) {
	dir := t.TempDir()
	data := runNode(t, dir, nil, "--perf-basic-prof")
	t.Cleanup(func() {
		// Only node's own map: other tests may be using theirs.
		for _, pid := range pidsOf(t, data, "node") {
			os.Remove("/tmp/perf-" + strconv.Itoa(int(pid)) + ".map")
		}
	})
	perfOut := perftest.Run(t, perftest.Perf(t), "report", "-i", data, "--stdio", "--no-children", "-g", "none", "--sort", "sym", "-q", "--percent-limit", "0")
	jitprof, _ := buildTools(t)
	ours := runOK(t, jitprof, "report", "-i", data, "--anon-samples", "--sort", "sym")
	compareJS(t, "perf map", symShares(ours), symShares(perfOut))

	cg := runOK(t, jitprof, "report", "-i", data, "--anon-samples", "-g", "--sort", "sym")
	for _, want := range []string{"JS:*mix", "JS:*fib"} {
		if !strings.Contains(cg, want) {
			t.Errorf("callgraph report lacks %s", want)
		}
	}
	checkPprof(t, jitprof, data, "JS:*mix", "JS:*fib")
}

// TestNodeJitdump: Node with --perf-prof writes a jitdump; jitprof must
// give the percentages perf inject --jit + perf report give.
func TestNodeJitdump(t *testing.T) {
	dir := t.TempDir()
	data := runNode(t, dir, []string{"-k", "mono"}, "--perf-prof", "--interpreted-frames-native-stack")
	injected := filepath.Join(dir, "injected.data")
	perftest.Run(t, perftest.Perf(t), "inject", "--jit", "-i", data, "-o", injected)
	perfOut := perftest.Run(t, perftest.Perf(t), "report", "-i", injected, "--stdio", "--no-children", "-g", "none", "--sort", "sym", "-q", "--percent-limit", "0")
	jitprof, _ := buildTools(t)
	ours := runOK(t, jitprof, "report", "-i", data, "--anon-handler", "jitdump", "--sort", "sym")
	compareJS(t, "jitdump", symShares(ours), symShares(perfOut))
	checkPprof(t, jitprof, data, "JS:*mix", "JS:*fib")
}

// pidsOf returns the pids a recording names comm for.
func pidsOf(t *testing.T, data, comm string) []uint32 {
	f, err := perfdata.Open(data)
	if err != nil {
		t.Error(err)
		return nil
	}
	defer f.Close()
	var pids []uint32
	r := f.Records()
	for r.Next() {
		if c, ok := r.Record().(*perfdata.Comm); ok && c.Comm == comm {
			pids = append(pids, c.PID)
		}
	}
	return pids
}

func runOK(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// checkPprof exports the profile and checks that the named functions are
// in it, read back with google/pprof's own parser.
func checkPprof(t *testing.T, jitprof, data string, funcs ...string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "prof.pb.gz")
	runOK(t, jitprof, "report", "-i", data, "--anon-samples", "--format", "pprof", "-o", out)
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("pprof export does not parse: %v", err)
	}
	names := map[string]bool{}
	for _, fn := range p.Function {
		names[genRe.ReplaceAllString(fn.Name, "")] = true
	}
	for _, want := range funcs {
		found := false
		for n := range names {
			if strings.HasPrefix(n, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("pprof export has no function %s", want)
		}
	}
}

// TestNodeJitdumpDWARF: Node with --perf-prof --perf-prof-unwinding-info
// writes a jitdump whose unwinding records describe its JIT code; with
// --call-graph dwarf, jitprof must unwind through that code from the
// jitdump as perf does after perf inject --jit (which turns the records
// into .eh_frame in the ELF files it writes): every --children row of
// 0.5% or more within 0.1 point, on the same recording.
func TestNodeJitdumpDWARF(t *testing.T) {
	dir := t.TempDir()
	data := runNode(t, dir, []string{"-k", "mono", "--call-graph", "dwarf"}, "--perf-prof", "--perf-prof-unwinding-info")
	perftest.Keep(t, dir)
	injected := filepath.Join(dir, "injected.data")
	perftest.Run(t, perftest.Perf(t), "inject", "--jit", "-i", data, "-o", injected)
	perfOut := perftest.Run(t, perftest.Perf(t), "report", "-i", injected, "--stdio", "--children", "-g", "none", "--sort", "sym", "-q", "--percent-limit", "0", "--no-inline")
	jitprof, _ := buildTools(t)
	ours := runOK(t, jitprof, "report", "-i", data, "--anon-handler", "jitdump", "--children", "-g", "none", "--sort", "sym")
	o, p := childrenShares(ours), childrenShares(perfOut)
	for name := range merge(o, p) {
		// The JS functions and node's C++ frames (and _start's,
		// libc's). Not V8's embedded builtins and bytecode handlers,
		// which are in node's own text: jitprof names them by node's
		// symbols (Builtins_X, labels such as
		// construct_stub_create_deopt_addr), perf by the jitdump's names
		// of the same code, which its injected mappings lay over node's.
		// Nor perf's 0xffffffffffffffff frames, where it stops a frame
		// short of jitprof at the end of the stack copy
		// (TestAgreesWithPerf says more).
		if !strings.HasPrefix(name, "JS:") && !strings.Contains(name, "::") && !strings.HasPrefix(name, "_start") && !strings.HasPrefix(name, "__libc") {
			continue
		}
		if math.Max(o[name], p[name]) >= 0.5 && math.Abs(o[name]-p[name]) > 0.1 {
			t.Errorf("%s: jitprof %.2f%%, perf %.2f%%", name, o[name], p[name])
		}
	}
	// The JIT code's callers: fib's frames unwound by its unwinding
	// records, and node's own frames above them.
	fib := 0.0
	for name, v := range o {
		if strings.HasPrefix(name, "JS:*fib ") {
			fib = max(fib, v)
		}
	}
	if fib < 10 || o["node::Start"] < fib {
		t.Errorf("JS:*fib %.2f%%, node::Start %.2f%%: the JIT code's callers are missing", fib, o["node::Start"])
	}
}

// childrenShares parses --children rows ("12.34%  1.00%  [N]  [.] name")
// into the children percentage by name, generations merged, V8's
// builtins named as perf inject names them (node's symbol Builtins_X is
// its jitdump's Builtin:X).
func childrenShares(out string) map[string]float64 {
	m := map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || strings.HasPrefix(line, "#") || !strings.HasSuffix(f[0], "%") {
			continue
		}
		pc, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "%"), 64)
		if err != nil {
			continue
		}
		i := 1
		for i < len(f) && (strings.HasSuffix(f[i], "%") || strings.Trim(f[i], "0123456789") == "") {
			i++
		}
		if i < len(f) && (f[i] == "[.]" || f[i] == "[k]") {
			i++
		}
		name := genRe.ReplaceAllString(strings.Join(f[i:], " "), "")
		if rest, ok := strings.CutPrefix(name, "Builtins_"); ok {
			name = "Builtin:" + rest
		}
		m[name] += pc
	}
	return m
}
