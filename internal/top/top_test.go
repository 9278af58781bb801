package top

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/report"
	"github.com/jitprof/jitprof/perfdata"
)

// fixture is a live view whose Builder a test fills by hand: two
// processes, one with JIT code.
type fixture struct {
	l                  *live
	app, jit, libc     int32
	appT, jitT         int32
	fMain, fFib, fCopy int32
}

func newFixture() *fixture {
	l := newLive(&perfdata.Attr{Name: "cpu-clock", SamplePeriod: 1000, Flags: perfdata.FlagFreq}, JIT{}, false)
	b := l.b
	f := &fixture{l: l}
	f.app = b.Image(profile.Image{Name: "/usr/bin/app"})
	f.libc = b.Image(profile.Image{Name: "/usr/lib/libc.so.6"})
	f.jit = b.Image(profile.Image{Name: "[JIT jitlog] node", Kind: profile.ImageAnon})
	f.appT = b.Thread(profile.Thread{PID: 10, TID: 10, Comm: b.String("app")})
	f.jitT = b.Thread(profile.Thread{PID: 20, TID: 20, Comm: b.String("node")})
	frame := func(im int32, name string) int32 {
		return b.Push(-1, b.Frame(profile.Frame{Func: b.Func(profile.Func{Name: name, Image: im})}))
	}
	f.fMain, f.fCopy, f.fFib = frame(f.app, "main"), frame(f.libc, "memcpy"), frame(f.jit, "fib [gen 3]")
	return f
}

func (f *fixture) add(stack, thread int32, n uint64) {
	f.l.b.Add(profile.Key{Stack: stack, Thread: thread, CPU: -1}, n, n*1000)
}

func rowsOf(t *testing.T, f *fixture, v View, zero bool) map[string]Row {
	t.Helper()
	p, _, _ := f.l.snapshot(zero)
	rows, err := v.rows(p)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]Row{}
	for _, r := range rows {
		m[strings.Join(r.Keys, " ")] = r
	}
	return m
}

var dsoSym = View{Keys: []string{report.KeyDSO, report.KeySym}, PID: -1}

// TestDecay: as perf top, counts lose an eighth at each refresh and
// gain what came since; with zero, only what came since counts.
func TestDecay(t *testing.T) {
	f := newFixture()
	f.add(f.fMain, f.appT, 800)
	f.add(f.fFib, f.jitT, 200)
	r := rowsOf(t, f, dsoSym, false)
	if r["/usr/bin/app [.] main"].Samples != 800 || math.Abs(r["/usr/bin/app [.] main"].Percent-80) > 1e-9 {
		t.Fatalf("first refresh: %+v", r)
	}
	f.add(f.fFib, f.jitT, 100)
	r = rowsOf(t, f, dsoSym, false)
	// main: 800*7/8 = 700; fib: 200*7/8+100 = 275.
	if got := r["/usr/bin/app [.] main"].Samples; got != 700 {
		t.Errorf("main decayed to %d, want 700", got)
	}
	if got := r["[JIT jitlog] node [.] fib [gen 3]"].Samples; got != 275 {
		t.Errorf("fib: %d, want 275", got)
	}
	if p := r["[JIT jitlog] node [.] fib [gen 3]"].Percent; math.Abs(p-100*275.0/975) > 0.01 {
		t.Errorf("fib: %.2f%%, want %.2f", p, 100*275.0/975)
	}
	// peek changes nothing.
	if p := f.l.peek(); p.Events[0].Count != 975 {
		t.Errorf("peek: %d samples, want the last refresh's 975", p.Events[0].Count)
	}
	f.add(f.fCopy, f.appT, 50)
	r = rowsOf(t, f, dsoSym, true)
	if len(r) != 1 || r["/usr/lib/libc.so.6 [.] memcpy"].Samples != 50 {
		t.Errorf("zero: %+v, want memcpy's 50 alone", r)
	}
	// Entries that decay to nothing leave the view.
	for range 60 {
		rowsOf(t, f, dsoSym, false)
	}
	if r := rowsOf(t, f, dsoSym, false); len(r) != 0 {
		t.Errorf("after 60 empty refreshes: %+v", r)
	}
}

// TestZoom: the UI's zooms keep a process, an image, JIT or native
// code, with percentages of what is shown; each row knows its process.
func TestZoom(t *testing.T) {
	f := newFixture()
	f.add(f.fMain, f.appT, 600)
	f.add(f.fCopy, f.appT, 200)
	f.add(f.fFib, f.jitT, 200)
	p, _, _ := f.l.snapshot(false)
	for _, c := range []struct {
		name string
		v    View
		want map[string]float64
	}{
		{"all", dsoSym, map[string]float64{"/usr/bin/app [.] main": 60, "/usr/lib/libc.so.6 [.] memcpy": 20, "[JIT jitlog] node [.] fib [gen 3]": 20}},
		{"pid", View{Keys: dsoSym.Keys, PID: 10}, map[string]float64{"/usr/bin/app [.] main": 75, "/usr/lib/libc.so.6 [.] memcpy": 25}},
		{"dso", View{Keys: dsoSym.Keys, PID: -1, DSO: "libc.so.6"}, map[string]float64{"/usr/lib/libc.so.6 [.] memcpy": 100}},
		{"jit", View{Keys: dsoSym.Keys, PID: -1, Code: JITCode}, map[string]float64{"[JIT jitlog] node [.] fib [gen 3]": 100}},
		{"native", View{Keys: dsoSym.Keys, PID: -1, Code: NativeCode}, map[string]float64{"/usr/bin/app [.] main": 75, "/usr/lib/libc.so.6 [.] memcpy": 25}},
		{"comm", View{Keys: []string{report.KeyComm}, PID: -1}, map[string]float64{"app": 80, "node": 20}},
	} {
		q := *p
		q.Entries = append([]profile.Entry(nil), p.Entries...)
		q.Events = append([]profile.Event(nil), p.Events...)
		rows, err := c.v.rows(&q)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, r := range rows {
			got[strings.Join(r.Keys, " ")] = r.Percent
			if want := map[string]uint32{"app": 10, "node": 20}[r.Comm]; r.PID != want {
				t.Errorf("%s: row %q is of pid %d (%s)", c.name, r.Keys, r.PID, r.Comm)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: rows %v, want %v", c.name, got, c.want)
		}
		for k, w := range c.want {
			if math.Abs(got[k]-w) > 1e-9 {
				t.Errorf("%s: %s %.2f%%, want %.2f", c.name, k, got[k], w)
			}
		}
	}
}

func TestTable(t *testing.T) {
	v := dsoSym
	title, lines := table(&v, []Row{
		{Row: report.Row{Keys: []string{"/usr/bin/app", "[.] main"}, Samples: 12}, Percent: 60},
		{Row: report.Row{Keys: []string{"[kernel.kallsyms]", "[k] do_syscall_64"}, Samples: 3}, Percent: 15},
	})
	want := []string{
		"  Overhead  Samples  Shared Object      Symbol",
		"    60.00%       12  /usr/bin/app       [.] main",
		"    15.00%        3  [kernel.kallsyms]  [k] do_syscall_64",
	}
	if got := append([]string{title}, lines...); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("table:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSortCycle(t *testing.T) {
	keys := sortPresets[0]
	for range sortPresets {
		keys = nextKeys(keys)
		if _, err := report.SortKeys(keys); err != nil {
			t.Errorf("%v: %v", keys, err)
		}
	}
	if strings.Join(keys, ",") != strings.Join(sortPresets[0], ",") {
		t.Errorf("the cycle does not come back: %v", keys)
	}
}

// TestBounded: a view fed new entries at every refresh, as on a machine
// running new processes all the time or of a JIT generating new code
// for ever, keeps a bounded Builder (entries, functions, stacks,
// threads): entries that decay to nothing are let go of, and beyond
// maxEntries the smallest are; a steady entry stays, at perf top's
// steady count (x = 7/8 x + n: 8n).
func TestBounded(t *testing.T) {
	f := newFixture()
	l := f.l
	l.maxEntries = 1000
	const perRefresh, refreshes = 1500, 80
	bound := max(compactMin, 2*l.maxEntries) + perRefresh
	start := time.Now().Add(-renewSymbolsEvery)
	l.symAt = start // the images read are let go of at the next compaction
	for r := range refreshes {
		b := l.b
		jit := b.Image(profile.Image{Name: "[JIT jitlog] node", Kind: profile.ImageAnon})
		main := b.Push(-1, b.Frame(profile.Frame{Func: b.Func(profile.Func{Name: "main", Image: b.Image(profile.Image{Name: "/usr/bin/app"})})}))
		appT := b.Thread(profile.Thread{PID: 10, TID: 10, Comm: b.String("app")})
		b.Add(profile.Key{Stack: main, Thread: appT, CPU: -1}, 1000, 1000*1000)
		// A new process, and new code, at every refresh.
		th := b.Thread(profile.Thread{PID: uint32(1000 + r), TID: uint32(1000 + r), Comm: b.String(fmt.Sprintf("proc%d", r))})
		for i := range perRefresh {
			fr := b.Frame(profile.Frame{Func: b.Func(profile.Func{Name: fmt.Sprintf("f%d_%d", r, i), Image: jit, Addr: uint64(r*perRefresh + i)})})
			b.Add(profile.Key{Stack: b.Push(-1, fr), Thread: th, CPU: -1}, 1, 1000)
		}
		p, _, _ := l.snapshot(false)
		if len(p.Entries) > l.maxEntries {
			t.Fatalf("refresh %d: %d entries shown, want at most %d", r, len(p.Entries), l.maxEntries)
		}
		m := l.b.Meta()
		if n := max(len(m.Entries), len(m.Funcs), len(m.Frames), len(m.Nodes), len(m.Threads), len(m.Strings), len(l.decayed)); n > bound {
			t.Fatalf("refresh %d: the Builder holds %d entries, %d functions, %d frames, %d nodes, %d threads, %d strings, %d decayed counts; want at most %d each",
				r, len(m.Entries), len(m.Funcs), len(m.Frames), len(m.Nodes), len(m.Threads), len(m.Strings), len(l.decayed), bound)
		}
		if r == refreshes-1 {
			if !l.symAt.After(start) {
				t.Errorf("the images read at the start are kept %v later", renewSymbolsEvery)
			}
			rows, err := dsoSym.rows(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) == 0 || rows[0].Keys[1] != "[.] main" || rows[0].Samples < 7990 || rows[0].Samples > 8000 {
				t.Errorf("the steady entry: %+v, want main at 8000 samples first", rows[:min(len(rows), 1)])
			}
		}
	}
}

// TestCallchains: with callchains, rows have children and self shares
// as report -g's, and the UI's tree of a row (c) is report -g's: spin's
// callers call_a and call_b at 3:1.
func TestCallchains(t *testing.T) {
	l := newLive(&perfdata.Attr{Name: "cpu-clock", SamplePeriod: 1000, Flags: perfdata.FlagFreq}, JIT{}, true)
	b := l.b
	app := b.Image(profile.Image{Name: "/usr/bin/calls"})
	fr := func(name string) int32 {
		return b.Frame(profile.Frame{Func: b.Func(profile.Func{Name: name, Image: app})})
	}
	th := b.Thread(profile.Thread{PID: 10, TID: 10, Comm: b.String("calls")})
	main := b.Push(-1, fr("main"))
	viaA, viaB := b.Push(b.Push(main, fr("call_a")), fr("spin")), b.Push(b.Push(main, fr("call_b")), fr("spin"))
	b.Add(profile.Key{Stack: viaA, Thread: th, CPU: -1}, 300, 300*1000)
	b.Add(profile.Key{Stack: viaB, Thread: th, CPU: -1}, 100, 100*1000)
	b.Add(profile.Key{Stack: main, Thread: th, CPU: -1}, 100, 100*1000)
	view := View{Keys: []string{report.KeySym}, PID: -1, Children: true, Chains: report.Chains{Graph: true, Threshold: 0.5}}
	st := &state{o: Options{View: view}, l: l}
	_, rows, _, err := st.refresh(&view)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]float64{}
	for _, r := range rows {
		got[r.Keys[0]] = [2]float64{r.ChildPercent, r.Percent}
	}
	want := map[string][2]float64{"[.] main": {100, 20}, "[.] spin": {80, 80}, "[.] call_a": {60, 0}, "[.] call_b": {20, 0}}
	for k, w := range want {
		if math.Abs(got[k][0]-w[0]) > 1e-9 || math.Abs(got[k][1]-w[1]) > 1e-9 {
			t.Errorf("%s: children %.2f%%, self %.2f%%; want %.0f%%, %.0f%%", k, got[k][0], got[k][1], w[0], w[1])
		}
	}
	var spin *Row
	for i := range rows {
		if rows[i].Keys[0] == "[.] spin" {
			spin = &rows[i]
		}
	}
	tree, err := st.callchains(&view, spin)
	if err != nil {
		t.Fatal(err)
	}
	// Caller order (children's default): from main to spin, split 3:1.
	for _, s := range []string{"main", "--60.00%--call_a", "--20.00%--call_b"} {
		if !strings.Contains(tree, s) {
			t.Errorf("spin's tree lacks %q:\n%s", s, tree)
		}
	}
	if _, err := st.callchains(&View{Keys: view.Keys, PID: -1}, spin); err == nil {
		t.Error("a tree without callchains")
	}
}
