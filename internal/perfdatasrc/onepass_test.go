package perfdatasrc

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/unwind"
	"github.com/jitprof/jitprof/perfdata"
)

// TestOnePassIsTwoPass reads perf's DWARF recording of a shell running
// the DWARF workload twice (forks and execs) the one-pass way and the
// two-pass way: the profiles, their samples' times, their spans of time
// and the unwinding's counts must be the same. The recording is read as
// perf wrote it and rewritten with every mapping and rename moved 200
// records later in the file, past samples of later times (as another
// CPU's buffer, written first, puts them): those samples are unwound
// again. (One recording, read with times and addresses, the cheapest
// options that check every frame and the samples' order: under the race
// detector on a loaded machine each read takes seconds.)
func TestOnePassIsTwoPass(t *testing.T) {
	path := perftest.Record(t, "execs.data", "--call-graph", "dwarf", "-F", "20000",
		"--", "sh", "-c", `"$0" 150; "$0" 150`, perftest.DWARF(t))
	f, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sameInOnePass(t, f, false)
	late, err := perfdata.Open(withLateRecords(t, f, 200))
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	sameInOnePass(t, late, true)
}

// sameInOnePass checks that f reads the one-pass way, having unwound
// samples again if late, to the profile the two-pass way gives.
func sameInOnePass(t *testing.T, f *perfdata.File, late bool) {
	t.Helper()
	opts := Options{Times: true, Addresses: true, Symbolizer: symbolize.New(symbolize.Options{})}
	if !onePassOK(f, opts) {
		t.Fatal("not a recording for the one pass")
	}
	op := new(onePass)
	got, ok, err := op.load(f, opts)
	if err != nil || !ok {
		t.Fatalf("the one pass gave up (%v)", err)
	}
	// As perf wrote it, a recording may have late records too: under
	// load another CPU's buffer is written first.
	if late && op.redone == 0 {
		t.Error("records moved late, and no sample was unwound again")
	}
	want, err := loadTwoPass(f, opts, 7, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got.Unwound.Chains == 0 {
		t.Fatal("no chains unwound")
	}
	if !reflect.DeepEqual(content(got), content(want)) {
		t.Errorf("late records %v: the one pass's profile differs from the two passes' (%d entries, want %d): %s",
			late, len(got.Entries), len(want.Entries), firstDifference(got, want))
	}
	if !reflect.DeepEqual(times(t, got), times(t, want)) {
		t.Errorf("late records %v: the samples' times differ", late)
	}
	if got.StartNS != want.StartNS || got.EndNS != want.EndNS || got.Lost != want.Lost || got.Unwound != want.Unwound {
		t.Errorf("late records %v: span %d-%d, %d lost, unwound %+v; the two passes' %d-%d, %d, %+v", late,
			got.StartNS, got.EndNS, got.Lost, got.Unwound, want.StartNS, want.EndNS, want.Lost, want.Unwound)
	}
}

// withLateRecords rewrites f with each MMAP and COMM record moved n
// records later, and returns the new file's path.
func withLateRecords(t *testing.T, f *perfdata.File, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "late.data")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := perfdata.NewWriter(out, f.Attrs)
	if err != nil {
		t.Fatal(err)
	}
	mmaps := 0
	moveLate(t, f, w, n, 0, func(rec perfdata.Record) perfdata.Record {
		switch rec := rec.(type) {
		case *perfdata.Mmap:
			mmaps++
			c := *rec
			return &c
		case *perfdata.Comm:
			c := *rec
			return &c
		}
		return nil
	})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if mmaps == 0 {
		t.Fatal("no mappings in the recording")
	}
	return path
}

// moveLate writes f's records to w, each that late returns a copy of
// (the reader reuses its records) n records later, as another CPU's
// buffer written first puts it. With round not 0, a FINISHED_ROUND
// follows every round records written, in place of f's.
func moveLate(t *testing.T, f *perfdata.File, w interface{ WriteRecord(perfdata.Record) error }, n, round int, late func(perfdata.Record) perfdata.Record) {
	t.Helper()
	type held struct {
		rec perfdata.Record
		at  int
	}
	var pending []held
	written := 0
	write := func(rec perfdata.Record) {
		if err := w.WriteRecord(rec); err != nil {
			t.Fatal(err)
		}
		if written++; round > 0 && written%round == 0 {
			if err := w.WriteRecord(&perfdata.FinishedRound{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for r := f.Records(); r.Next(); {
		rec := r.Record()
		if _, ok := rec.(*perfdata.FinishedRound); ok && round > 0 {
			continue
		}
		if c := late(rec); c != nil {
			pending = append(pending, held{c, written + n})
		} else {
			write(rec)
		}
		for len(pending) > 0 && pending[0].at <= written {
			p := pending[0].rec
			pending = pending[1:]
			write(p)
		}
	}
	for _, p := range pending {
		write(p.rec)
	}
}

// dwarfAttr is the attr of a recording with user stacks to unwind.
func dwarfAttr() *perfdata.Attr {
	return &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod |
			perfdata.SampleRegsUser | perfdata.SampleStackUser,
		SampleRegsUser: 0xff0fff, SampleStackUser: 64,
		Flags: perfdata.FlagSampleIDAll,
		IDs:   []uint64{1},
	}
}

// TestOnePassGivesUp: a recording with JIT code (anonymous executable
// memory), whose unwinding asks the JIT handlers, with handlers bound
// by the whole timeline (Bind) and not early, and a record reaching
// back to a sample resolved, are read the two-pass way. Without JIT
// handlers, JIT code does not give the one pass up.
func TestOnePassGivesUp(t *testing.T) {
	a := dwarfAttr()
	f := synthWith(t, a, []perfdata.Record{
		comm(a, 10, 1, "jit", false),
		sample(a, 10, 10, 2, 0x400010),
		mmap(a, 10, 3, 0x7f0000, 0x1000, "//anon"),
		sample(a, 10, 10, 4, 0x7f0010),
	})
	if !onePassOK(f, Options{}) {
		t.Fatal("a recording with stacks is not one for the one pass")
	}
	sym := symbolize.New(symbolize.Options{})
	if _, ok, err := loadOnePass(f, Options{Symbolizer: sym}); !ok || err != nil {
		t.Errorf("a recording with JIT code and no JIT handlers was not read in one pass (error %v)", err)
	}
	bind := func(*Timeline) (resolve.AnonResolver, error) { return fakeJIT{}, nil }
	if _, ok, err := loadOnePass(f, Options{Symbolizer: sym, Bind: bind}); ok || err != nil {
		t.Errorf("a recording with JIT code was read in one pass with handlers bound by the whole timeline (error %v)", err)
	}
	early := func(*Timeline) (EarlyAnon, error) { return nil, nil }
	if _, ok, err := loadOnePass(f, Options{Symbolizer: sym, Bind: bind, BindEarly: early}); ok || err != nil {
		t.Errorf("a recording with JIT code was read in one pass, its handlers not bound early (error %v)", err)
	}

	// Records of the time of samples waiting (a late mapping) mark them;
	// one of the time of a sample resolved gives up.
	op := new(onePass)
	tl := newTimeline(f)
	tl.take(mmap(a, 10, 0, 0x400000, 0x1000, "/bin/busy"))
	events := &eventIndex{attrs: f.Attrs}
	s := sample(a, 10, 10, 0, 0x400010)
	for i := range 10 {
		s.Time = uint64(100 + i)
		op.hold(tl, s, int64(i), events, nil, unwind.StopEnd, true)
	}
	op.oldest() // time 100
	if !op.take(tl, mmap(a, 10, 105, 0x500000, 0x1000, "/lib/x.so")) {
		t.Fatal("a mapping of the time of samples waiting gave up the one pass")
	}
	var late []uint64
	for range op.n {
		if w := op.oldest(); w.late {
			late = append(late, w.s.Time)
		}
	}
	if want := []uint64{105, 106, 107, 108, 109}; !slices.Equal(late, want) {
		t.Errorf("samples at %v marked to unwind again, want %v", late, want)
	}
	if !op.take(tl, mmap(a, 10, 110, 0x600000, 0x1000, "/lib/y.so")) {
		t.Error("a mapping after every sample gave up the one pass")
	}
	if op.take(tl, mmap(a, 10, 109, 0x700000, 0x1000, "/lib/z.so")) {
		t.Error("a mapping of the time of a sample resolved was taken")
	}
}

// earlyJIT is fakeJIT bound early, whose claims are settled until the
// unsettle'th time it is asked (never when 0).
type earlyJIT struct {
	fakeJIT
	asked, unsettle int
}

func (*earlyJIT) UnwindTable(uint32, uint64, uint64) (*unwind.Table, uint64, bool) {
	return nil, 0, false
}
func (*earlyJIT) Named(uint32, uint64, uint64) bool { return true }
func (e *earlyJIT) Settled() bool {
	e.asked++
	return e.asked != e.unsettle
}

// TestOnePassBindsEarly: a recording with JIT code reads in one pass
// with handlers bound early, asked whether their claims are settled
// once the timeline is read, to the profile the two passes give with
// handlers bound by the whole timeline; Bind is not asked. Claims not
// settled give the one pass up.
func TestOnePassBindsEarly(t *testing.T) {
	a := dwarfAttr()
	f := synthWith(t, a, []perfdata.Record{
		comm(a, 10, 1, "jit", false),
		sample(a, 10, 10, 2, 0x400010),
		mmap(a, 10, 3, 0x7f0000, 0x1000, "//anon"),
		sample(a, 10, 10, 4, 0x7f0010),
		comm(a, 10, 5, "jit2", false),
		sample(a, 10, 10, 6, 0x7f0010),
	})
	binds := 0
	e := &earlyJIT{}
	opts := Options{
		Symbolizer: symbolize.New(symbolize.Options{}),
		BindEarly:  func(*Timeline) (EarlyAnon, error) { return e, nil },
		Bind: func(*Timeline) (resolve.AnonResolver, error) {
			binds++
			return fakeJIT{}, nil
		},
	}
	got, ok, err := loadOnePass(f, opts)
	if !ok || err != nil {
		t.Fatalf("a recording with JIT code and handlers bound early was not read in one pass (error %v)", err)
	}
	if binds != 0 || e.asked != 1 {
		t.Errorf("Bind asked %d times, Settled %d; want 0 and 1 (once the timeline is read)", binds, e.asked)
	}
	want, err := loadTwoPass(f, opts, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(content(got), content(want)) {
		t.Errorf("the one pass's profile differs from the two passes': %s", firstDifference(got, want))
	}
	named := 0
	for k := range content(got) {
		if strings.HasPrefix(k, "jit@4|[JIT fake]|") || strings.HasPrefix(k, "jit@6|[JIT fake]|") {
			named++
		}
	}
	if named != 2 {
		t.Errorf("%d of the 2 JIT samples named by the handlers bound early: %v", named, content(got))
	}

	e = &earlyJIT{unsettle: 1} // the rename after the JIT sample
	if _, ok, err := loadOnePass(f, opts); ok || err != nil {
		t.Errorf("the one pass ended with claims not settled (error %v)", err)
	}
}
