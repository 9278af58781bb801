package diff

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	pprof "github.com/google/pprof/profile"

	"github.com/jitprof/jitprof/internal/flamegraph"
	"github.com/jitprof/jitprof/internal/golden"
	"github.com/jitprof/jitprof/internal/profile"
)

func TestNormalize(t *testing.T) {
	for _, c := range []struct {
		in, want string
		rules    Rule
	}{
		{"fib [gen 12]", "fib", Gen},
		{"JS:*fib /srv/app.js:1:13 [gen 4]", "fib /srv/app.js:1:13", Gen | V8Tier},
		{"JS:~fib /srv/app.js:1:13", "fib /srv/app.js:1:13", V8Tier},
		{"JS:^fib /srv/app.js:1:13", "fib /srv/app.js:1:13", V8Tier},
		{"JS:+fib /srv/app.js:1:13", "fib /srv/app.js:1:13", V8Tier},
		{"LazyCompile:*fib /srv/app.js:1", "fib /srv/app.js:1", V8Tier},
		{"Function:fib /srv/app.js:1", "fib /srv/app.js:1", V8Tier},
		{"Script:~ /srv/app.js", "Script: /srv/app.js", V8Tier},
		{"Builtin:ArgumentsAdaptorTrampoline", "Builtin:ArgumentsAdaptorTrampoline", 0},
		{"double Hot.trig(double) [0x7f97f5400ec0]", "double Hot.trig(double)", Address},
		{"anon (tgid:4711 range:0x7f0000-0x7f1000)", "anon", Address},
		{"f [loop 3]", "f [loop]", PyPyLoop},
		{"f [bridge 2 of loop 3]", "f [bridge]", PyPyLoop},
		{"bridge out of guard 0x7f0012", "bridge out of guard", Address},
		{"LHot;::trig_[j]", "LHot;::trig", HotSpotTier},
		{"LHot;::trig_[1]", "LHot;::trig", HotSpotTier},
		{"LA;::a_[j]->LB;::b_[i]", "LA;::a->LB;::b", HotSpotTier},
		{"[ambiguous: fib [gen 3] | collatz]", "[ambiguous: collatz | fib]", Gen},
		// Marks elsewhere in a name are the name's.
		{"sum [gen x]", "sum [gen x]", 0},
		{"[gen 3] fib", "[gen 3] fib", 0},
		{"JS:", "", V8Tier},
	} {
		got, r := Normalize(c.in)
		if got != c.want || r != c.rules {
			t.Errorf("Normalize(%q) = %q, %v; want %q, %v", c.in, got, r, c.want, c.rules)
		}
	}
	if s := (Gen | V8Tier).String(); s != "gen,v8-tier" {
		t.Errorf("rules = %q", s)
	}
}

// run is one run of a JIT: its functions' samples by name, and where the
// JIT's code and the program's image lie.
type run struct {
	pid     uint32
	exe     string
	jit     map[string]uint64 // JIT function name -> samples
	native  map[string]uint64 // function of exe -> samples
	period  uint64
	event   string
	kernelN uint64
}

func (r run) profile() *profile.Profile {
	b := profile.NewBuilder()
	ev := r.event
	if ev == "" {
		ev = "cpu-clock"
	}
	e := b.Event(profile.Event{Name: ev, Freq: 4000})
	exe := b.Image(profile.Image{Name: r.exe, Start: 0x400000, Limit: 0x500000})
	jit := b.Image(profile.Image{Name: "[JIT jitlog] app", Kind: profile.ImageAnon})
	kern := b.Image(profile.Image{Name: "[kernel.kallsyms]", Kind: profile.ImageKernel})
	th := b.Thread(profile.Thread{PID: r.pid, TID: r.pid, Comm: b.String("app")})
	add := func(im int32, name string, n uint64, kernel bool) {
		f := b.Func(profile.Func{Name: name, Image: im, Kernel: kernel})
		b.Add(profile.Key{Stack: b.Push(-1, b.Frame(profile.Frame{Func: f})), Thread: th, CPU: -1, Event: e}, n, n*r.period)
	}
	for _, name := range sortedKeys(r.jit) {
		add(jit, name, r.jit[name], false)
	}
	for _, name := range sortedKeys(r.native) {
		add(exe, name, r.native[name], false)
	}
	if r.kernelN > 0 {
		add(kern, "do_syscall_64", r.kernelN, true)
	}
	return b.Profile()
}

func sortedKeys(m map[string]uint64) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// runs are a JIT's two runs: its generations numbered differently, fib
// compiled twice in each, V8's tier marks on one function; main in a
// binary built elsewhere; work gone from the second run, sum new in it.
func runs() (base, cur run) {
	base = run{pid: 100, exe: "/build/v1/app", period: 250000,
		jit:    map[string]uint64{"fib [gen 1]": 300, "fib [gen 5]": 150, "collatz [gen 3]": 200, "JS:~mix /a.js:1 [gen 7]": 50},
		native: map[string]uint64{"main": 200, "work": 100}}
	cur = run{pid: 200, exe: "/build/v2/app", period: 250000,
		jit:     map[string]uint64{"fib [gen 4]": 200, "fib [gen 9]": 100, "collatz [gen 6]": 300, "JS:*mix /a.js:1 [gen 11]": 100},
		native:  map[string]uint64{"main": 200, "sum": 50},
		kernelN: 50}
	return base, cur
}

func rowOf(t *testing.T, ev *Event, sym string) *Row {
	t.Helper()
	for i := range ev.Rows {
		if ev.Rows[i].Keys[1] == sym {
			return &ev.Rows[i]
		}
	}
	t.Fatalf("no row %q in %v", sym, ev.Rows)
	return nil
}

func TestDiffMatchesJITAcrossRuns(t *testing.T) {
	base, cur := runs()
	res, err := Diff([]*profile.Profile{base.profile(), cur.profile()}, Options{Compute: Compute{Kind: Delta}, Order: 1})
	if err != nil {
		t.Fatal(err)
	}
	ev := &res.Events[0]
	if ev.Totals[0] != 1000*250000 || ev.Totals[1] != 1000*250000 {
		t.Fatalf("totals %v", ev.Totals)
	}
	for _, c := range []struct {
		sym       string
		dso       string
		base, cur uint64 // samples
		delta     float64
		rules     Rule
	}{
		{"[.] fib", "[JIT jitlog] app", 450, 300, -15, Gen},
		{"[.] collatz", "[JIT jitlog] app", 200, 300, 10, Gen},
		{"[.] mix /a.js:1", "[JIT jitlog] app", 50, 100, 5, Gen | V8Tier},
		{"[.] main", "app", 200, 200, 0, 0},
		{"[.] work", "app", 100, 0, -10, 0},
		{"[.] sum", "app", 0, 50, 5, 0},
		{"[k] do_syscall_64", "[kernel.kallsyms]", 0, 50, 5, 0},
	} {
		r := rowOf(t, ev, c.sym)
		if r.Keys[0] != c.dso || r.Cells[0].Samples != c.base || r.Cells[1].Samples != c.cur || r.Matched != c.rules {
			t.Errorf("%s: %q, %d -> %d samples, matched by %v; want %q, %d -> %d, %v", c.sym, r.Keys[0], r.Cells[0].Samples, r.Cells[1].Samples, r.Matched, c.dso, c.base, c.cur, c.rules)
		}
		if d, ok := ev.Value(r, 1, res.Compute); !ok || math.Abs(d-c.delta) > 1e-9 {
			t.Errorf("%s: delta %v, %v; want %v", c.sym, d, ok, c.delta)
		}
	}
	if got := rowOf(t, ev, "[.] fib").Names; !slices.Equal(got[0], []string{"fib [gen 1]", "fib [gen 5]"}) || !slices.Equal(got[1], []string{"fib [gen 4]", "fib [gen 9]"}) {
		t.Errorf("fib's names: %q", got)
	}
	// -c delta sorts by the signed delta.
	var deltas []float64
	for i := range ev.Rows {
		d, _ := ev.Value(&ev.Rows[i], 1, res.Compute)
		deltas = append(deltas, d)
	}
	if !slices.IsSortedFunc(deltas, func(a, b float64) int { return -cmpFloat(a, b) }) {
		t.Errorf("rows not sorted by delta: %v", deltas)
	}

	// With exact names every generation is a row of its own, and none
	// of one run matches the other's.
	res, err = Diff([]*profile.Profile{base.profile(), cur.profile()}, Options{Exact: true, Order: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rules != 0 {
		t.Errorf("exact names matched by %v", res.Rules)
	}
	for _, r := range res.Events[0].Rows {
		if strings.Contains(r.Keys[1], "[gen") && r.Cells[0].Present == r.Cells[1].Present {
			t.Errorf("exact: %q is in both runs", r.Keys[1])
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestComputations(t *testing.T) {
	base := run{pid: 1, exe: "/bin/a", period: 1000, native: map[string]uint64{"a": 60, "b": 40}}
	cur := run{pid: 2, exe: "/bin/a", period: 1000, native: map[string]uint64{"a": 30, "b": 60, "c": 10}}
	ps := []*profile.Profile{base.profile(), cur.profile()}
	for _, c := range []struct {
		compute string
		order   []string // symbols, in order
		values  map[string]string
	}{
		{"delta-abs", []string{"[.] a", "[.] b", "[.] c"}, map[string]string{"[.] a": "-30.00%", "[.] b": "+20.00%", "[.] c": "+10.00%"}},
		{"delta", []string{"[.] b", "[.] c", "[.] a"}, nil},
		{"ratio", []string{"[.] b", "[.] a", "[.] c"}, map[string]string{"[.] a": "0.500000", "[.] b": "1.500000", "[.] c": "N/A"}},
		{"wdiff:1,2", []string{"[.] b", "[.] a", "[.] c"}, map[string]string{"[.] a": "0", "[.] b": "80000", "[.] c": "N/A"}},
	} {
		cp, err := ParseCompute(c.compute)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Diff(ps, Options{Compute: cp, Order: 1})
		if err != nil {
			t.Fatal(err)
		}
		ev := &res.Events[0]
		var order []string
		for i := range ev.Rows {
			r := &ev.Rows[i]
			order = append(order, r.Keys[1])
			v, ok := ev.Value(r, 1, cp)
			if want, ok2 := c.values[r.Keys[1]]; ok2 && formatValue(v, ok, cp) != want {
				t.Errorf("%s: %s = %s, want %s", c.compute, r.Keys[1], formatValue(v, ok, cp), want)
			}
		}
		if !slices.Equal(order, c.order) {
			t.Errorf("%s: order %q, want %q", c.compute, order, c.order)
		}
	}
	// -o 0 sorts by the baseline; -b keeps its rows only.
	res, err := Diff(ps, Options{Order: 0, BaselineOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range res.Events[0].Rows {
		order = append(order, r.Keys[1])
	}
	if !slices.Equal(order, []string{"[.] a", "[.] b"}) {
		t.Errorf("-o 0 -b: order %q", order)
	}
	for _, bad := range []string{"wdiff", "wdiff:1", "wdiff:a,b", "delta-rel"} {
		if _, err := ParseCompute(bad); err == nil {
			t.Errorf("ParseCompute(%q) did not fail", bad)
		}
	}
	if _, err := Diff(ps, Options{Order: 2}); err == nil {
		t.Error("-o 2 of two profiles did not fail")
	}
	if _, err := Diff(ps[:1], Options{}); err == nil {
		t.Error("a diff of one profile did not fail")
	}
}

// TestEvents: events are matched by name; one event on each side is
// one whatever its name (cpu-clock, cpu-clock:u).
func TestEvents(t *testing.T) {
	a := run{pid: 1, exe: "/bin/a", period: 1, native: map[string]uint64{"a": 1}, event: "cpu-clock"}
	b := run{pid: 1, exe: "/bin/a", period: 1, native: map[string]uint64{"a": 1}, event: "cpu-clock:u"}
	res, err := Diff([]*profile.Profile{a.profile(), b.profile()}, Options{Order: 1})
	if err != nil || len(res.Events) != 1 || res.Events[0].Rows[0].Cells[1].Samples != 1 {
		t.Errorf("cpu-clock against cpu-clock:u: %v, %+v", err, res)
	}
}

func TestWriters(t *testing.T) {
	base, cur := runs()
	files := []string{"base.data", "new.data"}
	for _, c := range []struct {
		name   string
		opts   Options
		period bool
		write  func(*bytes.Buffer, *Result, WriteOptions) error
	}{
		{"delta-abs.txt", Options{Order: 1}, false, func(b *bytes.Buffer, r *Result, o WriteOptions) error { return WriteText(b, r, o) }},
		{"ratio.period.txt", Options{Order: 1, Compute: Compute{Kind: Ratio}}, true, func(b *bytes.Buffer, r *Result, o WriteOptions) error { return WriteText(b, r, o) }},
		{"exact.txt", Options{Order: 1, Exact: true}, false, func(b *bytes.Buffer, r *Result, o WriteOptions) error { return WriteText(b, r, o) }},
		{"delta.json", Options{Order: 1, Compute: Compute{Kind: Delta}}, false, func(b *bytes.Buffer, r *Result, o WriteOptions) error { return WriteJSON(b, r, o) }},
		{"wdiff.csv", Options{Order: 1, Compute: Compute{Kind: WDiff, W1: 1, W2: 2}}, false, func(b *bytes.Buffer, r *Result, o WriteOptions) error { return WriteCSV(b, r, o) }},
	} {
		res, err := Diff([]*profile.Profile{base.profile(), cur.profile()}, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := c.write(&b, res, WriteOptions{Files: files, Period: c.period}); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", c.name), b.Bytes())
	}
	// Three profiles: a column per newer one, numbered.
	res, err := Diff([]*profile.Profile{base.profile(), cur.profile(), cur.profile()}, Options{Order: 2})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteText(&b, res, WriteOptions{Files: append(files, "new2.data")}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "three.txt"), b.Bytes())
}

// TestJSONRoundTrip: what WriteJSON writes reads back to the result's
// numbers.
func TestJSONRoundTrip(t *testing.T) {
	base, cur := runs()
	res, err := Diff([]*profile.Profile{base.profile(), cur.profile()}, Options{Order: 1})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, res, WriteOptions{Files: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Rules  []string
		Events []struct {
			Rows []struct {
				Keys      map[string]string
				MatchedBy []string `json:"matched_by"`
				Files     []struct {
					Samples uint64
					Value   *float64
				}
			}
		}
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	ev := &res.Events[0]
	if len(got.Events) != 1 || len(got.Events[0].Rows) != len(ev.Rows) {
		t.Fatalf("read back %d events", len(got.Events))
	}
	for i, r := range got.Events[0].Rows {
		want := &ev.Rows[i]
		v, _ := ev.Value(want, 1, res.Compute)
		if "[.] "+r.Keys["sym"] != want.Keys[1] && "[k] "+r.Keys["sym"] != want.Keys[1] ||
			r.Files[0].Samples != want.Cells[0].Samples || r.Files[1].Samples != want.Cells[1].Samples ||
			r.Files[1].Value == nil || math.Abs(*r.Files[1].Value-v) > 1e-4 || strings.Join(r.MatchedBy, ",") != want.Matched.String() {
			t.Errorf("row %d: %+v, want %+v", i, r, want)
		}
	}
}

// TestPprof: the comparison as pprof -diff_base makes it: the new
// samples as they are, the base's negated and labelled pprof::base, JIT
// functions of both runs one function.
func TestPprof(t *testing.T) {
	base, cur := runs()
	pp, err := Pprof(base.profile(), cur.profile(), false)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := pp.Write(&b); err != nil {
		t.Fatal(err)
	}
	pp, err = pprof.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	byFunc := map[string][2]int64{} // name -> base, new samples
	fns := map[string]int{}
	for _, fn := range pp.Function {
		fns[fn.Name]++
	}
	for _, s := range pp.Sample {
		name := s.Location[0].Line[0].Function.Name
		v := byFunc[name]
		if s.DiffBaseSample() {
			if s.Value[0] > 0 {
				t.Errorf("a base sample of %s is positive: %v", name, s.Value)
			}
			v[0] -= s.Value[0]
		} else {
			v[1] += s.Value[0]
		}
		byFunc[name] = v
	}
	for name, want := range map[string][2]int64{"fib": {450, 300}, "collatz": {200, 300}, "mix /a.js:1": {50, 100}, "work": {100, 0}, "sum": {0, 50}} {
		if byFunc[name] != want {
			t.Errorf("%s: base, new = %v, want %v", name, byFunc[name], want)
		}
	}
	if fns["fib"] != 1 {
		t.Errorf("fib is %d functions, want 1", fns["fib"])
	}
}

// TestHTML: the differential flame graph carries each frame's base
// samples, JIT generations of both runs one frame.
func TestHTML(t *testing.T) {
	base, cur := runs()
	var b bytes.Buffer
	if err := HTML(&b, base.profile(), cur.profile(), false, flamegraph.Options{Title: "new", BaseTitle: "base"}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	i := strings.Index(page, "const flameData = ")
	j := strings.Index(page[i:], ";\n")
	var d struct {
		Frames [][]any `json:"frames"`
		Root   []any   `json:"root"`
		Base   float64 `json:"base"`
	}
	if i < 0 || j < 0 || json.Unmarshal([]byte(page[i+len("const flameData = "):i+j]), &d) != nil {
		t.Fatal("no flameData in the page")
	}
	if d.Base != 1000 {
		t.Errorf("base total %v, want 1000", d.Base)
	}
	// root -> app -> fib: 300 new samples, 450 in the base.
	var fib []any
	for _, comm := range d.Root[2].([]any) {
		for _, c := range comm.([]any)[2].([]any) {
			n := c.([]any)
			if d.Frames[int(n[0].(float64))][0] == "fib" {
				fib = n
			}
		}
	}
	if fib == nil || fib[1].(float64) != 300 || len(fib) < 4 || fib[3].(float64) != 450 {
		t.Errorf("fib's node: %v, want 300 samples, 450 in the base", fib)
	}
	if !strings.Contains(page, "compared with base") {
		t.Error("the page does not name the base")
	}
}
