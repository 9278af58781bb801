package anonbind

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/codemap"
	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/perfdatasrc"
	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/perfdata"
)

const (
	jitBase  = 0x7f0000000000
	perPID   = 600
	loopA    = jitBase + 0x1000
	notMyJIT = 0x400123 // in no mapping
)

var pids = []uint32{4001, 4002}

// recording writes two processes that ran JIT code in an anonymous
// mapping, perPID samples each, with callchains, and the symbol files
// examples/anonhandler reads for them; it returns the file and the
// directory of the symbol files.
func recording(t *testing.T) (*perfdata.File, string) {
	t.Helper()
	a := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod | perfdata.SampleCallchain,
		Flags:      perfdata.FlagSampleIDAll,
		IDs:        []uint64{1},
	}
	common := func(pid uint32, time uint64) perfdata.Common {
		return perfdata.Common{Attr: a, PID: pid, TID: pid, Time: time, Misc: perfdata.MiscUser}
	}
	syms := t.TempDir()
	var recs []perfdata.Record
	for _, pid := range pids {
		recs = append(recs,
			&perfdata.Comm{Common: common(pid, 1), PID: pid, TID: pid, Comm: fmt.Sprintf("jit%d", pid)},
			&perfdata.Mmap{Common: common(pid, 2), PID: pid, TID: pid, Addr: jitBase, Len: 0x100000, Filename: "//anon"})
		body := fmt.Sprintf("loop_a_%d %x 100\nloop_b_%d %x 80\n", pid, loopA, pid, loopA+0x100)
		if err := os.WriteFile(filepath.Join(syms, fmt.Sprintf("jitsyms-%d.txt", pid)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range perPID {
		for _, pid := range pids {
			// Some addresses are past the symbols: unknown to the handler.
			ip := loopA + uint64(i*7%0x200)
			s := &perfdata.Sample{Common: common(pid, uint64(10+i)), IP: ip, Period: 1000,
				Callchain: []uint64{perfdata.CallchainUser, ip, loopA + 0x110, notMyJIT}}
			recs = append(recs, s)
		}
	}
	return perftest.OpenData(t, []*perfdata.Attr{a}, recs), syms
}

// exampleHandler builds examples/anonhandler behind a script that logs
// what it is asked into $HANDLER_LOG, and returns the script's path.
func exampleHandler(t *testing.T, syms string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "example")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/anonhandler").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Setenv("ANONHANDLER_DIR", syms)
	script := filepath.Join(dir, "jitprof-anon-logged")
	body := fmt.Sprintf("#!/bin/sh\ntee -a \"$HANDLER_LOG\" | exec %s\n", bin)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// load loads f with the handler at path, Prepare'd or not, and returns
// the profile and the claims.
func load(t *testing.T, f *perfdata.File, path string, prepare, leafOnly bool) (*profile.Profile, []Claim) {
	t.Helper()
	hs, err := anon.Select([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := perfdatasrc.BuildTimeline(f)
	if err != nil {
		t.Fatal(err)
	}
	// The processes are the test's user's, as jitprof record would say:
	// a handler runs as the process's user (as nobody for one not known)
	// when jitprof runs as root, and reads and logs in the test's files.
	bundle := &jitbundle.Bundle{}
	for _, pid := range pids {
		bundle.Processes = append(bundle.Processes, jitbundle.Process{PID: int(pid), NSPID: int(pid), UID: os.Geteuid(), GID: os.Getegid()})
	}
	b := New(Recorded(tl.Tracker, bundle, anon.TimeRange{}), Options{Handlers: hs, Proc: linux.Proc{Root: t.TempDir()}})
	if prepare {
		if !b.Batches() {
			t.Fatal("an external handler, and the binder does not batch")
		}
		qs := map[uint32][]anon.Query{}
		perfdatasrc.ScanAnon(f, tl, leafOnly, func(pid uint32, addr, time uint64) {
			qs[pid] = append(qs[pid], anon.Query{Addr: addr, Time: time})
		})
		b.Prepare(qs)
	}
	p, err := perfdatasrc.Load(f, perfdatasrc.Options{Timeline: tl, Anon: b, LeafOnly: leafOnly, Symbolizer: symbolize.New(symbolize.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	b.Close() // its errors are in the claims
	return p, b.Claims()
}

// content is a profile's samples by what they are, not by ids.
func content(p *profile.Profile) map[string]uint64 {
	m := map[string]uint64{}
	var stack []int32
	for _, e := range p.Entries {
		var b strings.Builder
		stack = p.Stack(stack[:0], e.Stack)
		for _, fr := range stack {
			fn := p.FuncOf(fr)
			fmt.Fprintf(&b, "%s|%s;", fn.Name, p.Images[fn.Image].Name)
		}
		fmt.Fprintf(&b, " pid %d", p.Threads[e.Thread].PID)
		m[b.String()] += e.Count
	}
	return m
}

// TestPrepareBatches: an external handler is asked about each process's
// samples in batches (one round trip for perPID samples, not perPID), and
// the profile is the one asking sample by sample gives.
func TestPrepareBatches(t *testing.T) {
	f, syms := recording(t)
	handler := exampleHandler(t, syms)
	for _, leafOnly := range []bool{true, false} {
		t.Run(fmt.Sprintf("leafOnly=%v", leafOnly), func(t *testing.T) {
			requests := func(prepare bool) (map[string]uint64, []Claim, int) {
				log := filepath.Join(t.TempDir(), "requests")
				t.Setenv("HANDLER_LOG", log)
				p, claims := load(t, f, handler, prepare, leafOnly)
				b, err := os.ReadFile(log)
				if err != nil {
					t.Fatal(err)
				}
				return content(p), claims, strings.Count(string(b), "resolve ")
			}
			want, _, perSample := requests(false)
			got, claims, batched := requests(true)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the profile differs with batches:\n%v\nwant\n%v", got, want)
			}
			if batched != len(pids) {
				t.Errorf("%d resolve requests for %d processes of %d samples, want one each (sample by sample: %d)", batched, len(pids), perPID, perSample)
			}
			named := 0
			for k, n := range got {
				if strings.HasPrefix(k, "loop_") {
					named += int(n)
				}
			}
			if named == 0 || len(claims) != len(pids) || claims[0].Handler == "" || claims[0].Named == 0 || claims[0].Named >= claims[0].Asked {
				t.Errorf("%d samples named; claims %+v", named, claims)
			}
		})
	}
}

// TestResolveFailureInClaims: a handler that takes a process and then
// fails on every lookup leaves its samples unnamed, and the claim says so
// instead of being silent.
func TestResolveFailureInClaims(t *testing.T) {
	f, _ := recording(t)
	path := filepath.Join(t.TempDir(), "jitprof-anon-broken")
	body := "#!/bin/sh\nwhile read l; do case $l in claim*) echo yes broken data;; resolve*) echo error the map is gone;; esac; done\n"
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, prepare := range []bool{false, true} {
		p, claims := load(t, f, path, prepare, true)
		for k := range content(p) {
			if strings.HasPrefix(k, "loop_") {
				t.Errorf("prepare %v: named %q", prepare, k)
			}
		}
		if len(claims) != len(pids) {
			t.Fatalf("prepare %v: claims %+v", prepare, claims)
		}
		for _, c := range claims {
			if c.Handler != path || c.ResolveErr == nil || !strings.Contains(c.ResolveErr.Error(), "resolve: the map is gone") || c.Named != 0 || c.Asked == 0 {
				t.Errorf("prepare %v: claim %+v, want the resolve error and nothing named", prepare, c)
			}
		}
	}
}

// fake is a built-in-like handler whose resolver names every address
// after one long name, counting its claims.
type fake struct {
	claims atomic.Int32
	name   string
}

func (h *fake) Name() string { return "fake" }
func (h *fake) Claim(p *anon.Process) (anon.Resolver, error) {
	h.claims.Add(1)
	return fakeResolver{h.name}, nil
}

type fakeResolver struct{ name string }

func (r fakeResolver) Resolve(addr, t uint64) (anon.Symbol, bool) {
	// Code at even 0x100 blocks is still there at the end.
	unload := uint64(codemap.Forever)
	if addr&0x100 != 0 {
		unload = 15
	}
	return anon.Symbol{Name: r.name, Start: addr &^ 0xff, Size: 0x100, Gen: 3, Load: 5, Unload: unload}, true
}
func (fakeResolver) Source() string { return "fake data" }
func (fakeResolver) Close() error   { return nil }

func binder(t *testing.T, h anon.Handler) *Binder {
	t.Helper()
	f, _ := recording(t)
	tl, err := perfdatasrc.BuildTimeline(f)
	if err != nil {
		t.Fatal(err)
	}
	return New(Recorded(tl.Tracker, nil, anon.TimeRange{}), Options{Handlers: []anon.Handler{h}, Proc: linux.Proc{Root: t.TempDir()}})
}

// TestNamesBuiltOnce: the report's name of a piece of code ("NAME [gen
// N]") is built once, not once per sample: a 4 KiB name over thousands
// of samples must cost no allocation per sample.
func TestNamesBuiltOnce(t *testing.T) {
	h := &fake{name: strings.Repeat("n", 4096)}
	b := binder(t, h)
	want := h.name + " [gen 3]"
	if af, ok := b.Resolve(pids[0], loopA, 20); !ok || af.Func != want || af.Image != "[JIT fake] jit4001" || af.Handler != "fake" {
		t.Fatalf("Resolve = %+v, %v", af, ok)
	}
	allocs := testing.AllocsPerRun(1000, func() { b.Resolve(pids[0], loopA+8, 30) })
	if allocs > 0 {
		t.Errorf("%v allocations per sample", allocs)
	}
}

// TestLifetimeInProfile: when each piece of code was there, and its size,
// reach the profile's functions, and the handler that named it their
// image; code there at the end has no unload.
func TestLifetimeInProfile(t *testing.T) {
	f, _ := recording(t)
	tl, err := perfdatasrc.BuildTimeline(f)
	if err != nil {
		t.Fatal(err)
	}
	b := New(Recorded(tl.Tracker, nil, anon.TimeRange{}), Options{Handlers: []anon.Handler{&fake{name: "f"}}, Proc: linux.Proc{Root: t.TempDir()}})
	p, err := perfdatasrc.Load(f, perfdatasrc.Options{Timeline: tl, Anon: b, LeafOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for _, fn := range p.Funcs {
		if p.Images[fn.Image].Kind != profile.ImageAnon {
			continue
		}
		if h := p.Images[fn.Image].Handler; h != "fake" {
			t.Errorf("JIT image %q named by handler %q, want fake", p.Images[fn.Image].Name, h)
		}
		want := profile.Func{Name: "f [gen 3]", Image: fn.Image, Addr: fn.Addr, Size: 0x100, Gen: 3, Load: 5}
		if fn.Addr&0x100 != 0 {
			want.Unload = 15
		}
		if !reflect.DeepEqual(fn, want) {
			t.Errorf("JIT function %+v, want %+v", fn, want)
		}
		seen[fn.Unload] = true
	}
	if !seen[0] || !seen[15] {
		t.Errorf("unload times %v: want code unloaded at 15 and code there at the end", seen)
	}
}

// TestConcurrentResolve: the parallel loader's workers resolve at once;
// each process is claimed once and every answer is its own.
func TestConcurrentResolve(t *testing.T) {
	h := &fake{name: "f"}
	b := binder(t, h)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				pid := pids[(w+i)%len(pids)]
				addr := loopA + uint64(i%16)*0x100
				if af, ok := b.Resolve(pid, addr, uint64(i)); !ok || af.Start != addr || af.Func != "f [gen 3]" {
					t.Errorf("Resolve(%d, %#x) = %+v, %v", pid, addr, af, ok)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := h.claims.Load(); n != int32(len(pids)) {
		t.Errorf("%d claims for %d processes", n, len(pids))
	}
	for _, c := range b.Claims() {
		if c.Asked != c.Named || c.Asked == 0 {
			t.Errorf("claim %+v", c)
		}
	}
}

// TestRecorded: what a handler sees of a recorded process comes from
// the recording: its name and mappings from the Tracker, who it was and
// its JIT data from the recorder's bundle.
func TestRecorded(t *testing.T) {
	tr := process.New()
	tr.SetComm(7, 7, 1, "node", false)
	tr.Map(process.Mapping{PID: 7, Start: 0x1000, End: 0x2000, Path: "/usr/bin/node", Time: 2, Exec: true})
	tr.Map(process.Mapping{PID: 7, Start: 0x7f00, End: 0x8f00, Path: "//anon", Time: 3, Exec: true, Anon: true})
	bundle := &jitbundle.Bundle{
		Processes: []jitbundle.Process{{PID: 7, NSPID: 1, UID: 1000, GID: 1000, StartTime: 4242}},
		Files:     []jitbundle.Entry{{PID: 7, Kind: "perfmap", Path: "/tmp/perf-1.map", Data: []byte("7f00 10 f\n")}, {PID: 8, Kind: "perfmap", Path: "/tmp/perf-8.map"}},
	}
	p := Recorded(tr, bundle, anon.TimeRange{From: 10, To: 90}).Process(7)
	want := anon.Process{
		PID: 7, NSPID: 1, Comm: "node", UID: 1000, GID: 1000, StartTime: 4242, Span: anon.TimeRange{From: 10, To: 90},
		Mappings: []anon.Mapping{{Start: 0x1000, End: 0x2000, Time: 2, Path: "/usr/bin/node", Exec: true}, {Start: 0x7f00, End: 0x8f00, Time: 3, Path: "//anon", Anon: true, Exec: true}},
		Embedded: map[string][]byte{"/tmp/perf-1.map": []byte("7f00 10 f\n")},
		Kinds:    map[string]string{"/tmp/perf-1.map": "perfmap"},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("Process(7) = %+v\nwant %+v", p, want)
	}
	// A process the recorder did not identify: its files are judged as
	// the user's running jitprof (trust.UnknownOwner).
	if p := Recorded(tr, nil, anon.TimeRange{}).Process(7); p.UID != trust.UnknownOwner || p.GID != trust.UnknownOwner || p.NSPID != 7 || p.Embedded != nil {
		t.Errorf("without a bundle: %+v", p)
	}
}

// seqHandler claims every process with a resolver that numbers the
// generations of its code, as jitlog's does.
type seqHandler struct{}

func (seqHandler) Name() string { return "seq" }
func (seqHandler) Claim(p *anon.Process) (anon.Resolver, error) {
	return seqResolver{}, nil
}

type seqResolver struct{ fakeResolver }

func (seqResolver) ResolveSeq(addr, seq uint64) (anon.Symbol, bool) {
	if seq == 0 {
		return anon.Symbol{}, false
	}
	return anon.Symbol{Name: "f", Start: addr &^ 0xff, Size: 0x100, Gen: seq}, true
}

// TestResolveSeq: a sample file's (address, sequence number) is named
// through the Binder by the claiming handler's generations; a handler
// without them names nothing so, and the claim counts what was asked.
func TestResolveSeq(t *testing.T) {
	b := binder(t, seqHandler{})
	af, ok := b.ResolveSeq(pids[0], loopA+8, 5)
	if !ok || af.Func != "f [gen 5]" || af.Gen != 5 || af.Start != loopA || af.Image != "[JIT seq] jit4001" {
		t.Errorf("ResolveSeq = %+v, %v", af, ok)
	}
	if _, ok := b.ResolveSeq(pids[0], loopA+8, 0); ok {
		t.Error("an unknown generation named")
	}
	if c := b.Claims(); len(c) != 1 || c[0].Asked != 2 || c[0].Named != 1 {
		t.Errorf("claims %+v", c)
	}
	if _, ok := binder(t, &fake{name: "f"}).ResolveSeq(pids[0], loopA, 5); ok {
		t.Error("a resolver without generations named code by one")
	}
	// Through a Resolver, as a sample-file source feeds it.
	tr := process.New()
	tr.Map(process.Mapping{PID: pids[0], Start: jitBase, End: jitBase + 0x100000, Path: "//anon", Exec: true, Anon: true})
	pb := profile.NewBuilder()
	pb.Event(profile.Event{Name: "cpu-clock"})
	r := resolve.New(pb, tr, resolve.Options{Symbolizer: symbolize.New(symbolize.Options{}), Anon: b, LeafOnly: true})
	r.Add(&resolve.Sample{PID: pids[0], TID: pids[0], Mode: resolve.ModeUser, IP: loopA + 0x10, BySeq: true, Seq: 9, Count: 3})
	p := pb.Profile()
	if fn := p.FuncOf(p.Nodes[p.Entries[0].Stack].Frame); fn.Name != "f [gen 9]" || p.Entries[0].Count != 3 {
		t.Errorf("sample by sequence number named %q (%d samples)", fn.Name, p.Entries[0].Count)
	}
}
