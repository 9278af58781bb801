package sessionsrc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jitprof/jitprof/internal/anon"
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
	dir := t.TempDir()
	pid := uint32(os.Getpid())

	// The JIT: two generations at one address.
	jl := t.TempDir()
	lg, err := jitlog.Open(jitlog.Options{Dir: jl, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	const code = 0x7f0000001000
	seq1, err1 := lg.CodeLoad(code, 0x40, "fib", nil)
	seq2, err2 := lg.CodeLoad(code, 0x40, "collatz", nil)
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
	add(sampledb.Sample{App: app, Image: app, CGTo: jit, TGID: pid, TID: pid, Key1: 0x10, Key2: 0x1010}, 7)
	db.AddLost(0, 4)
	jd, err := db.JITDir(int(pid))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(jitlog.DatabasePath(jl, int(pid)))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(jd, "data.jitlog"), data, 0o600)
	m, _ := json.Marshal(map[string]any{"pid": pid, "uid": os.Getuid(), "comm": "test", "handler": "jitlog",
		"files": []map[string]string{{"path": "/gone/" + filepath.Base(jitlog.DatabasePath(jl, int(pid))), "kind": "jitlog", "name": "data.jitlog"}}})
	os.WriteFile(filepath.Join(jd, "process.json"), m, 0o600)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(jl) // the JIT's own file is gone: the copy names it

	spec, _ := sampledb.ParseSpec(nil)
	p, binder, info, err := Load(Options{Dir: dir, Spec: spec, Anon: anon.Builtins()})
	if err != nil {
		t.Fatal(err)
	}
	if info.Files != 2 || info.CallGraph != 1 || len(info.Unreadable) != 0 {
		t.Errorf("info: %+v, want 2 sample files and 1 call-graph file", info)
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
