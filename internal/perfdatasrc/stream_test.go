package perfdatasrc

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/perfdata"
)

// asStream writes f's records as perf's pipe mode.
func asStream(t *testing.T, f *perfdata.File) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := perfdata.NewPipeWriter(&buf, f.Attrs)
	if err != nil {
		t.Fatal(err)
	}
	for r := f.Records(); r.Next(); {
		if err := w.WriteRecord(r.Record()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestStreamIsFile reads recordings as streams, in one pass, and as
// files (perf's pipe mode saved to a file), in parts: the profiles must
// be the same.
func TestStreamIsFile(t *testing.T) {
	for _, c := range replayCases {
		t.Run(c.name, func(t *testing.T) { sameAsStream(t, asStream(t, synth(t, c.recs))) })
	}
	t.Run("system", func(t *testing.T) {
		busy := perftest.Busy(t)
		// A sample per CPU per period of wall time, whatever runs: the
		// workload's 0.9 s of CPU time took 2-3 s at a load of 8-12
		// (11,000-15,000 samples of every process, each profile made
		// and compared 5 ways under the race detector), more under
		// more load. timeout (as in TestParallelLoadIsSequential)
		// bounds it to a second: at most 4,000 samples a CPU. busy
		// forks and execs as it starts.
		out := perftest.Run(t, perftest.Perf(t), "record", "-q", "-a", "-g", "-F", "4000", "-o", "-", "--",
			"sh", "-c", `timeout 1 "$0" 1000000 2 1; exit 0`, busy)
		sameAsStream(t, []byte(out))
	})
}

func sameAsStream(t *testing.T, data []byte) {
	t.Helper()
	file, err := perfdata.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if !file.PipeLayout {
		t.Fatal("not read as pipe-mode data")
	}
	sym := symbolize.New(symbolize.Options{})
	for _, opts := range []Options{{}, {LeafOnly: true}, {LeafOnly: true, Lines: true}, {Lines: true, Addresses: true}, {Times: true}} {
		opts.Symbolizer = sym
		want, err := load(file, opts, 7, 3)
		if err != nil {
			t.Fatal(err)
		}
		s, err := perfdata.NewStream(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Load(s, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(content(got), content(want)) {
			t.Errorf("%+v: the stream's profile differs from the file's (%d entries, want %d): %s",
				opts, len(got.Entries), len(want.Entries), firstDifference(got, want))
		}
		if opts.Times && !reflect.DeepEqual(times(t, got), times(t, want)) {
			t.Errorf("%+v: the stream's samples' times differ from the file's", opts)
		}
		if got.StartNS != want.StartNS || got.EndNS != want.EndNS || got.Lost != want.Lost {
			t.Errorf("%+v: the stream's samples span %d-%d with %d lost, the file's %d-%d with %d", opts,
				got.StartNS, got.EndNS, got.Lost, want.StartNS, want.EndNS, want.Lost)
		}
	}
}

// fakeJIT names every anonymous address "jit@N", N the sample's time.
type fakeJIT struct{}

func (fakeJIT) Resolve(pid uint32, addr, time uint64) (resolve.AnonFrame, bool) {
	return resolve.AnonFrame{Func: "jit@" + string(rune('0'+time)), Image: "[JIT fake]", Start: addr}, true
}

// TestBind checks that Load asks Bind for the JIT names with the whole
// timeline, before it resolves a sample, from a file and from a stream,
// and names JIT code by the time of each sample.
func TestBind(t *testing.T) {
	f := synth(t, func(a *perfdata.Attr) []perfdata.Record {
		return []perfdata.Record{
			comm(a, 10, 1, "jit", false),
			mmap(a, 10, 2, 0x7f0000, 0x1000, "/dev/zero (deleted)"),
			sample(a, 10, 10, 3, 0x7f0010),
			sample(a, 10, 10, 4, 0x7f0010),
			sample(a, 10, 10, 5, 0x7f0010),
		}
	})
	stream := asStream(t, f)
	s, err := perfdata.NewStream(bytes.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]*perfdata.File{"file": f, "stream": s} {
		var procs []process.Process
		opts := Options{Symbolizer: symbolize.New(symbolize.Options{}), Bind: func(tl *Timeline) (resolve.AnonResolver, error) {
			procs = tl.Tracker.Processes()
			return fakeJIT{}, nil
		}}
		p, err := Load(f, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(procs) != 1 || procs[0].Comm != "jit" || len(procs[0].Mappings) != 1 || !procs[0].Mappings[0].Anon {
			t.Errorf("%s: Bind saw processes %+v, want jit's with its anonymous mapping", name, procs)
		}
		var names []string
		for _, e := range p.Entries {
			fn := p.FuncOf(p.Nodes[e.Stack].Frame)
			names = append(names, fn.Name+" in "+p.Images[fn.Image].Name)
		}
		if want := []string{"jit@3 in [JIT fake]", "jit@4 in [JIT fake]", "jit@5 in [JIT fake]"}; !reflect.DeepEqual(sorted(names), want) {
			t.Errorf("%s: samples named %q, want %q", name, names, want)
		}
	}
}

func sorted(l []string) []string {
	slices.Sort(l)
	return l
}

// TestFlatBind: a flat load with JIT names (report --anon-samples) reads
// the flat way, asks Bind once, names each sample in anonymous memory by
// its own time, and gives the profile the sample-by-sample way gives.
func TestFlatBind(t *testing.T) {
	f := synth(t, func(a *perfdata.Attr) []perfdata.Record {
		return []perfdata.Record{
			comm(a, 10, 1, "jit", false),
			mmap(a, 10, 2, 0x7f0000, 0x1000, "/dev/zero (deleted)"),
			mmap(a, 10, 2, base, 0x1000, "/lib/libx.so"),
			sample(a, 10, 10, 3, 0x7f0010),
			sample(a, 10, 10, 4, base+0x10),
			sample(a, 10, 10, 5, 0x7f0010),
			sample(a, 10, 10, 6, base+0x10),
			sample(a, 10, 10, 7, 0x7f0010),
		}
	})
	binds := 0
	opts := Options{LeafOnly: true, Symbolizer: symbolize.New(symbolize.Options{}), Bind: func(tl *Timeline) (resolve.AnonResolver, error) {
		binds++
		return fakeJIT{}, nil
	}}
	if !flatOK(f, opts) {
		t.Fatal("a flat load with Bind does not read the flat way")
	}
	got, err := Load(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	if binds != 1 {
		t.Errorf("Bind asked %d times, want once", binds)
	}
	var names []string
	for _, e := range got.Entries {
		fn := got.FuncOf(got.Nodes[e.Stack].Frame)
		if got.Images[fn.Image].Name == "[JIT fake]" {
			names = append(names, fn.Name)
		}
	}
	if want := []string{"jit@3", "jit@5", "jit@7"}; !reflect.DeepEqual(sorted(names), want) {
		t.Errorf("JIT samples named %q, want %q", names, want)
	}
	tl, err := BuildTimeline(f)
	if err != nil {
		t.Fatal(err)
	}
	opts.Timeline = tl // the sample-by-sample way
	want, err := load(f, opts, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(content(got), content(want)) {
		t.Errorf("the flat way's profile differs: %s", firstDifference(got, want))
	}
}

// TestStreamLateMappings: a DWARF recording whose mappings come late in
// its stream (as another CPU's ring is read a round later under load)
// unwinds as the file does: a sample's stack waits for the mappings of
// its time. Each mapping is moved 200 records on, within the next round
// (rounds every 1,000 records, as perf's FINISHED_ROUND allows); before
// the samples waited, the first samples after each exec, in ld.so,
// unwound through nothing.
func TestStreamLateMappings(t *testing.T) {
	data := perftest.Record(t, "dwarf.data", "--call-graph", "dwarf", "-F", "20000", "--", perftest.DWARF(t), "300")
	f, err := perfdata.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	w, err := perfdata.NewPipeWriter(&buf, f.Attrs)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	moveLate(t, f, w, 200, 1000, func(rec perfdata.Record) perfdata.Record {
		if m, ok := rec.(*perfdata.Mmap); ok {
			moved++
			c := *m
			return &c
		}
		return nil
	})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if moved == 0 {
		t.Fatal("no mappings in the recording")
	}
	sameAsStream(t, buf.Bytes())
}

// TestHeldSamples: a stream's samples with stacks are unwound a round
// late, as perf report orders a stream, from copies of their stacks,
// and never more than maxHeldStacks of them wait.
func TestHeldSamples(t *testing.T) {
	attr := &perfdata.Attr{SampleType: perfdata.SampleTime | perfdata.SampleStackUser}
	sample := func(tm uint64, stack []byte) *perfdata.Sample {
		return &perfdata.Sample{Common: perfdata.Common{Attr: attr, Time: tm}, StackUser: stack, StackDyn: uint64(len(stack))}
	}
	var got []uint64
	add := func(s *perfdata.Sample) { got = append(got, s.Time) }
	var h heldSamples
	buf := []byte{1, 2, 3}
	h.hold(sample(10, buf), add)
	buf[0] = 9 // the reader reuses its buffers
	h.hold(sample(20, []byte{4}), add)
	h.round(add)
	if len(got) != 0 {
		t.Fatalf("unwound %v at the first round; want none: a later round may bring their mappings", got)
	}
	h.hold(sample(15, []byte{5}), add) // another CPU's, read a round late
	h.hold(sample(30, []byte{6}), add)
	if h.samples[0].StackUser[0] != 1 {
		t.Errorf("a held stack changed with the reader's buffer: %v", h.samples[0].StackUser)
	}
	h.round(add)
	if !slices.Equal(got, []uint64{10, 20, 15}) {
		t.Errorf("the second round unwound %v; want those up to the first round's latest time, 10 20 15", got)
	}
	h.all(add)
	if !slices.Equal(got, []uint64{10, 20, 15, 30}) {
		t.Errorf("at the end %v; want every sample once", got)
	}

	// A stream without rounds: the oldest are unwound past the bound.
	got = nil
	h = heldSamples{}
	big := make([]byte, 1<<20)
	for i := range 100 {
		h.hold(sample(uint64(i), big), add)
		if h.bytes > maxHeldStacks {
			t.Fatalf("%d bytes of stacks held, more than %d", h.bytes, maxHeldStacks)
		}
	}
	if len(got) == 0 || got[0] != 0 || len(got)+len(h.samples) != 100 {
		t.Errorf("%d unwound (the first at %v) and %d held of 100", len(got), got[:min(1, len(got))], len(h.samples))
	}
}
