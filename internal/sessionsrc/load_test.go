package sessionsrc

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/report"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/jitlog"
)

// TestLoad: a session written through sampledb reads back as a profile:
// offsets of a file image as its addresses, JIT code named by generation
// from the session's copy of a jitlog database (two generations at one
// address, told apart by the sequence number the files keep), threads
// and CPUs as the files separate them, lost samples from the metadata,
// call-graph files counted apart and not as samples.
func TestLoad(t *testing.T) {
	dir, pid, seq1, seq2 := newSession(t)
	spec, _ := sampledb.ParseSpec(nil)
	p, binder, info, err := Load(Options{Dir: dir, Spec: spec, Anon: anon.Builtins()})
	if err != nil {
		t.Fatal(err)
	}
	if info.Files != 2 || info.CallGraph != 2 || len(info.Unreadable) != 0 {
		t.Errorf("info: %+v, want 2 sample files and 2 call-graph files", info)
	}
	if p.Arcs != nil {
		t.Errorf("arcs %v read without Options.Arcs", p.Arcs)
	}
	if p.Lost != 4 || p.Events[0].Count != 10 || p.Events[0].Freq != 1000 {
		t.Errorf("lost %d, events %+v: want 4 lost, 10 samples at 1000 Hz", p.Lost, p.Events)
	}
	got := map[string]uint64{}
	for _, e := range p.Entries {
		f := p.FuncOf(p.Nodes[e.Stack].Frame)
		th := p.Threads[e.Thread]
		got[f.Name+" "+p.Images[f.Image].Name+" "+p.Strings[th.Comm]+" "+itoa(th.TID)+" "+itoa(uint32(e.CPU))] += e.Count
	}
	want := map[string]uint64{
		"0x0000000000001234 /nonexistent/app app " + itoa(pid+1) + " 1":                      5,
		"fib [gen " + itoa(uint32(seq1)) + "] [JIT jitlog] test app " + itoa(pid) + " 0":     3,
		"collatz [gen " + itoa(uint32(seq2)) + "] [JIT jitlog] test app " + itoa(pid) + " 0": 2,
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%q: %d samples, want %d (all: %v)", k, got[k], n, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("entries %v, want %v", got, want)
	}
	claims := binder.Claims()
	if len(claims) != 1 || claims[0].Handler != "jitlog" {
		t.Errorf("claims %+v, want pid %d by jitlog", claims, pid)
	}
}

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

// newSession writes a session: 5 samples in an app at 0x1234; JIT
// code of process pid, two generations at one address (fib, seq1:
// 3 samples; collatz, seq2: 2); arcs from the app to each generation
// (0x10 -> fib 7 times, 0x20 -> collatz 3 times, and 0x10 -> the
// address without a generation, as arcs written before they kept one,
// once), and from fib to the app (0x1234, twice); 4 lost samples.
func newSession(t *testing.T) (dir string, pid uint32, seq1, seq2 uint64) {
	dir = t.TempDir()
	pid = uint32(os.Getpid())

	// The JIT: two generations at one address.
	jl := t.TempDir()
	lg, err := jitlog.Open(jitlog.Options{Dir: jl, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	const code = 0x7f0000001000
	var err1, err2 error
	seq1, err1 = lg.CodeLoad(code, 0x40, "fib", nil)
	seq2, err2 = lg.CodeLoad(code, 0x40, "collatz", nil)
	if err := lg.Close(); err1 != nil || err2 != nil || err != nil {
		t.Fatal(err1, err2, err)
	}

	db, err := sampledb.Create(dir, sampledb.Options{Separate: sampledb.SeparateThread | sampledb.SeparateCPU,
		Events: []sampledb.Event{{Name: "cpu-clock", Count: 1000, Freq: true}}})
	if err != nil {
		t.Fatal(err)
	}
	app, _ := db.FileImage(sampledb.FileIdent{}, "/nonexistent/app", sampledb.ImageInfo{})
	jit, _ := db.JITImage("jitlog", pid, code-0x1000, code+0x10000)
	add := func(s sampledb.Sample, n int) {
		for range n {
			if err := db.Add(&s); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(sampledb.Sample{App: app, Image: app, TGID: pid, TID: pid + 1, CPU: 1, Key1: 0x1234}, 5)
	add(sampledb.Sample{App: app, Image: jit, TGID: pid, TID: pid, CPU: 0, Key1: 0x1010, Key2: seq1}, 3)
	add(sampledb.Sample{App: app, Image: jit, TGID: pid, TID: pid, CPU: 0, Key1: 0x1010, Key2: seq2}, 2)
	const size = 0x11000
	add(sampledb.Sample{App: app, Image: app, CGTo: jit, TGID: pid, TID: pid, Key1: 0x10, Key2: sampledb.ArcEnd(0x1010, seq1, size)}, 7)
	add(sampledb.Sample{App: app, Image: app, CGTo: jit, TGID: pid, TID: pid, Key1: 0x20, Key2: sampledb.ArcEnd(0x1010, seq2, size)}, 3)
	add(sampledb.Sample{App: app, Image: app, CGTo: jit, TGID: pid, TID: pid, Key1: 0x10, Key2: 0x1010}, 1)
	add(sampledb.Sample{App: app, Image: jit, CGTo: app, TGID: pid, TID: pid, Key1: sampledb.ArcEnd(0x1010, seq1, size), Key2: 0x1234}, 2)
	db.AddLost(0, 4)
	jd, err := db.JITRoot(int(pid))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(jitlog.DatabasePath(jl, int(pid)))
	if err != nil {
		t.Fatal(err)
	}
	jd.WriteFile("data.jitlog", data, 0o600)
	m, _ := json.Marshal(map[string]any{"pid": pid, "uid": os.Getuid(), "comm": "test", "handler": "jitlog",
		"files": []map[string]string{{"path": "/gone/" + filepath.Base(jitlog.DatabasePath(jl, int(pid))), "kind": "jitlog", "name": "data.jitlog"}}})
	jd.WriteFile("process.json", m, 0o600)
	jd.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(jl) // the JIT's own file is gone: the copy names it
	return dir, pid, seq1, seq2
}

// TestLoadArcs: with Options.Arcs the call-graph files become the
// profile's arcs, each end named as a plain sample at its place is:
// offsets in the app as its functions (here by address: the app has no
// file), JIT code by the generation the arc kept, and an arc without one
// in the range's anon bucket; without handlers, all JIT ends are in the
// bucket. The call graph counts each function's callers and callees.
func TestLoadArcs(t *testing.T) {
	dir, pid, seq1, seq2 := newSession(t)
	spec, _ := sampledb.ParseSpec(nil)
	fib, collatz := "fib [gen "+itoa(uint32(seq1))+"]", "collatz [gen "+itoa(uint32(seq2))+"]"
	bucket := fmt.Sprintf("anon (tgid:%d range:%#x-%#x)", pid, 0x7f0000000000, 0x7f0000011000)
	for _, c := range []struct {
		name string
		anon []anon.Handler
		want map[string]uint64
	}{
		{"handlers", anon.Builtins(), map[string]uint64{
			"0x0000000000000010 -> " + fib:     7,
			"0x0000000000000020 -> " + collatz: 3,
			"0x0000000000000010 -> " + bucket:  1,
			fib + " -> 0x0000000000001234":     2,
		}},
		{"no handlers", nil, map[string]uint64{
			"0x0000000000000010 -> " + bucket: 8,
			"0x0000000000000020 -> " + bucket: 3,
			bucket + " -> 0x0000000000001234": 2,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, _, info, err := Load(Options{Dir: dir, Spec: spec, Anon: c.anon, Arcs: true})
			if err != nil {
				t.Fatal(err)
			}
			if info.CallGraph != 2 || len(info.Unreadable) != 0 {
				t.Fatalf("info %+v, want 2 call-graph files", info)
			}
			got := map[string]uint64{}
			for _, a := range p.Arcs {
				got[p.FuncOf(a.Caller).Name+" -> "+p.FuncOf(a.Callee).Name] += a.Count
				if a.Period != a.Count*1e6 {
					t.Errorf("arc period %d for %d samples at 1000 Hz", a.Period, a.Count)
				}
			}
			if !maps.Equal(got, c.want) {
				t.Errorf("arcs %v, want %v", got, c.want)
			}
		})
	}

	// The call graph of the named arcs: fib has its own 3 samples, one
	// caller and one callee.
	p, _, _, err := Load(Options{Dir: dir, Spec: spec, Anon: anon.Builtins(), Arcs: true})
	if err != nil {
		t.Fatal(err)
	}
	graph := report.ComputeArcs(p, report.Options{})
	if len(graph) != 1 {
		t.Fatalf("%d events, want 1", len(graph))
	}
	names := func(ends []report.ArcEnd) map[string]uint64 {
		m := map[string]uint64{}
		for _, e := range ends {
			m[p.Funcs[e.Func].Name] = e.Samples
		}
		return m
	}
	var order []string
	for _, f := range graph[0].Funcs {
		name := p.Funcs[f.Func].Name
		order = append(order, name)
		if name != fib {
			continue
		}
		if f.Samples != 3 || !maps.Equal(names(f.Callers), map[string]uint64{"0x0000000000000010": 7}) ||
			!maps.Equal(names(f.Callees), map[string]uint64{"0x0000000000001234": 2}) {
			t.Errorf("fib: %d samples, callers %v, callees %v; want 3, 0x10 7 times, 0x1234 twice", f.Samples, names(f.Callers), names(f.Callees))
		}
	}
	// By own samples, then by arcs' samples: 0x10 (8 out) before 0x20.
	want := []string{"0x0000000000001234", fib, collatz, "0x0000000000000010", "0x0000000000000020", bucket}
	if !slices.Equal(order, want) {
		t.Errorf("order %q, want %q", order, want)
	}
}
