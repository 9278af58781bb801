package anonbind

import (
	"os"
	"strconv"
	"testing"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/jitlog"
)

// liveProcesses are this test's own process, with an anonymous mapping
// where its jitlog says code was generated, as a collector that is not
// perf.data tells them.
type liveProcesses struct{ start, end uint64 }

func (l liveProcesses) Process(pid uint32) anon.Process {
	return anon.Process{PID: int(pid), NSPID: int(pid), Comm: "self", UID: os.Getuid(),
		Mappings: []anon.Mapping{{Start: l.start, End: l.end, Path: "//anon", Exec: true}}}
}

// TestJitlogBySeq is seed 000's path end to end without perf.data: a
// JIT logs two generations of code at one address (jitlog), a collector
// keeps each sample's (address, sequence number) instead of its time,
// and the Resolver names each sample's generation through the Binder
// and the built-in jitlog handler (anon.SeqResolver), with its source
// line where the JIT gave one.
func TestJitlogBySeq(t *testing.T) {
	const addr = 0x7f1234560000
	t.Setenv(jitlog.EnvDir, t.TempDir())
	l, err := jitlog.Open(jitlog.Options{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s1, err := l.CodeLoad(addr, 0x100, "loop", &jitlog.Load{Files: []string{"loop.go"}, Lines: []jitlog.LineEntry{{CodeOffset: 0, Line: 10}, {CodeOffset: 0x20, Line: 12}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CodeUnload(s1); err != nil {
		t.Fatal(err)
	}
	s2, err := l.CodeLoad(addr, 0x100, "loop", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	hs, err := anon.Select([]string{"jitlog"})
	if err != nil {
		t.Fatal(err)
	}
	pid := uint32(os.Getpid())
	b := New(liveProcesses{addr, addr + 0x1000}, Options{Handlers: hs})
	tr := process.New()
	tr.Map(process.Mapping{PID: pid, Start: addr, End: addr + 0x1000, Path: "//anon", Exec: true, Anon: true})
	pb := profile.NewBuilder()
	pb.Event(profile.Event{Name: "cpu-clock"})
	r := resolve.New(pb, tr, resolve.Options{Symbolizer: symbolize.New(symbolize.Options{}), Anon: b, LeafOnly: true, Lines: true})
	for _, s := range []struct{ seq, count uint64 }{{s1, 3}, {s2, 5}, {s1, 1}} {
		r.Add(&resolve.Sample{PID: pid, TID: pid, Mode: resolve.ModeUser, IP: addr + 0x30, BySeq: true, Seq: s.seq, Count: s.count})
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	p := pb.Profile()
	got := map[string]uint64{}
	for _, e := range p.Entries {
		fr := p.Frames[p.Nodes[e.Stack].Frame]
		fn := p.FuncOf(p.Nodes[e.Stack].Frame)
		got[fn.Name+" "+p.Images[fn.Image].Name+" "+p.Strings[fr.File]] += e.Count
	}
	want := map[string]uint64{
		"loop [gen " + strconv.FormatUint(s1, 10) + "] [JIT jitlog] self loop.go": 4,
		"loop [gen " + strconv.FormatUint(s2, 10) + "] [JIT jitlog] self ":        5,
	}
	if len(got) != len(want) {
		t.Fatalf("samples %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("samples %v, want %v", got, want)
			break
		}
	}
	if c := b.Claims(); len(c) != 1 || c[0].Handler != "jitlog" || c[0].Named != c[0].Asked {
		t.Errorf("claims %+v", c)
	}
}
