package perfdatasrc

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/perfdata"
)

// TestParallelLoadIsSequential loads recordings in one part and in many
// parts read by several workers: the merged profile must hold the same
// samples with the same stacks, frames and threads. (Ids may differ: on a
// busy machine parts meet frames in another order.)
func TestParallelLoadIsSequential(t *testing.T) {
	for _, c := range replayCases {
		t.Run(c.name, func(t *testing.T) {
			f := synth(t, c.recs)
			sameInParts(t, f)
			sameTimelineInParts(t, f)
		})
	}
	// A system-wide recording has a sample per CPU per period of wall
	// time, whatever runs: its size follows the workload's wall time,
	// which grows with the machine's load. timeout (which signals the
	// whole process group, busy's forked child too) bounds it to a
	// second: at most 4,000 samples a CPU.
	for name, args := range map[string][]string{
		"system":  {"-a", "-g", "-F", "4000", "--", "sh", "-c", `timeout 1 "$0" 1000000 2 1; exit 0`, "BUSY"},
		"process": {"-g", "-F", "4000", "--", "BUSY", "100", "1", "1"},
	} {
		t.Run(name, func(t *testing.T) {
			perftest.Perf(t)
			args[slices.Index(args, "BUSY")] = perftest.Busy(t)
			f, err := perfdata.Open(perftest.Record(t, name+".data", args...))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sameInParts(t, f)
			sameTimelineInParts(t, f)
		})
	}
}

// sameInParts checks that f's profile is the same read in one part and
// in many, and for flat profiles, the same read the flat way (in one
// pass, by place) and sample by sample after a timeline pass, which
// Load does when it is given the timeline.
func sameInParts(t *testing.T, f *perfdata.File) {
	tl, err := BuildTimeline(f)
	if err != nil {
		t.Fatal(err)
	}
	sym := symbolize.New(symbolize.Options{})
	for _, opts := range []Options{{}, {LeafOnly: true}, {LeafOnly: true, Lines: true}, {Lines: true, Addresses: true}, {Times: true}} {
		opts.Symbolizer = sym
		byTimeline := opts
		byTimeline.Timeline = tl
		want, err := load(f, byTimeline, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if parts := len(tl.chunks(f, 1000)); parts < 2 {
			t.Fatalf("1000 parts asked for, %d made", parts)
		}
		// Once, not for each of the 8 profiles compared with it: under
		// the race detector, a system-wide recording's content took a
		// third of the package's test time.
		wantContent := content(want)
		var wantTimes map[string][]uint64
		if opts.Times {
			wantTimes = times(t, want)
		}
		for _, n := range []int{1, 2, 7, 1000} {
			for _, o := range []Options{opts, byTimeline} {
				got, err := load(f, o, n, 3)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(content(got), wantContent) {
					t.Errorf("%+v (flat way: %v): the profile read in %d parts differs from the one read in one (%d entries, want %d): %s",
						opts, flatOK(f, o), n, len(got.Entries), len(want.Entries), firstDifference(got, want))
				}
				if o.Times && !reflect.DeepEqual(times(t, got), wantTimes) {
					t.Errorf("%+v: the samples' times read in %d parts differ from those read in one", opts, n)
				}
			}
		}
	}
}

// TestTimelineInPartsLost: the parts sum the lost samples of the LOST
// and LOST_SAMPLES records spread through a recording (a loaded
// machine's), which the one pass takes one by one.
func TestTimelineInPartsLost(t *testing.T) {
	f := synth(t, func(a *perfdata.Attr) []perfdata.Record {
		recs := []perfdata.Record{comm(a, 10, 1, "prog", false), mmap(a, 10, 2, base, 0x1000, "/bin/prog")}
		for i := range uint64(200) {
			recs = append(recs, sample(a, 10, 10, 3+2*i, base+0x10))
			if i%9 == 0 {
				recs = append(recs, &perfdata.Lost{Common: common(a, 10, 10, 4+2*i), LostID: 1, Lost: i + 1})
			}
			if i%13 == 0 {
				recs = append(recs, &perfdata.LostSamples{Common: common(a, 10, 10, 4+2*i), Lost: 1000 + i})
			}
		}
		return recs
	})
	one, err := timelineInOnePass(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if one.lost == 0 {
		t.Fatal("no samples lost in one pass")
	}
	sameTimelineInParts(t, f)
}

// sameTimelineInParts checks that f's timeline read in parallel parts
// is the one read in one pass: its processes and mappings, the samples
// lost, where the data can be split, and the profile loaded with it.
// Parts too small to hold a record boundary make the parallel read give
// up (buildTimeline then reads in one pass); some number of parts must
// not.
func sameTimelineInParts(t *testing.T, f *perfdata.File) {
	one, err := timelineInOnePass(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	sym := symbolize.New(symbolize.Options{})
	want, err := load(f, Options{Symbolizer: sym, Timeline: one}, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	wantContent := content(want)
	read := 0
	for _, n := range []int{2, 3, 7, 1000} {
		tl, ok := timelineInParts(f, n, 3, nil)
		if !ok {
			continue
		}
		read++
		if !slices.Equal(tl.bounds, one.bounds) || tl.lost != one.lost {
			t.Errorf("%d parts: %d bounds, %d lost; in one pass %d, %d", n, len(tl.bounds), tl.lost, len(one.bounds), one.lost)
		}
		if !reflect.DeepEqual(tl.Tracker.Processes(), one.Tracker.Processes()) {
			t.Errorf("%d parts: the processes differ from those read in one pass", n)
		}
		got, err := load(f, Options{Symbolizer: sym, Timeline: tl}, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(content(got), wantContent) {
			t.Errorf("%d parts: the profile differs: %s", n, firstDifference(got, want))
		}
	}
	if read == 0 {
		t.Error("the timeline was read in parts for no number of parts")
	}
}

// TestFlatStraddles reads places whose samples straddle a change: the
// flat way must read those samples one by one.
func TestFlatStraddles(t *testing.T) {
	f := synth(t, func(a *perfdata.Attr) []perfdata.Record {
		return []perfdata.Record{
			comm(a, 60, 1, "before", false),
			mmap(a, 60, 1, base, 0x1000, "/lib/old.so"),
			sample(a, 60, 60, 2, base+0x10),
			sample(a, 60, 60, 3, base+0x10),
			mmap(a, 60, 5, base, 0x1000, "/lib/new.so"),
			sample(a, 60, 60, 6, base+0x10),
			comm(a, 60, 8, "after", false),
			sample(a, 60, 60, 9, base+0x10),
			// Written after the rename but taken before it.
			sample(a, 60, 60, 7, base+0x10),
		}
	})
	sameInParts(t, f)
	p, err := Load(f, Options{LeafOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, e := range p.Entries {
		fn := p.FuncOf(p.Nodes[e.Stack].Frame)
		got[p.Images[fn.Image].Name+" "+p.Strings[p.Threads[e.Thread].Comm]] += e.Count
	}
	want := map[string]uint64{"/lib/old.so before": 2, "/lib/new.so before": 2, "/lib/new.so after": 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("samples by image and thread name %v, want %v", got, want)
	}
}

// TestFlatFalseStart reads a file in which a part's start, as Resync
// guesses it, is inside a sample: the parts do not join up, and the
// profile must be the one read the usual way.
func TestFlatFalseStart(t *testing.T) {
	a := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod | perfdata.SampleRaw,
		Flags:      perfdata.FlagSampleIDAll,
	}
	var recs []perfdata.Record
	recs = append(recs, mmap(a, 7, 0, base, 0x10000, "/bin/seven"))
	small := func(i int) {
		if i%100 == 0 {
			recs = append(recs, &perfdata.FinishedRound{}) // where the usual way may split
		}
		recs = append(recs, &perfdata.Sample{Common: common(a, 7, 7, uint64(i)), IP: base + uint64(i%64), Period: 1000, Raw: []byte{1, 2, 3, 4}})
	}
	for i := range 1500 {
		small(1 + i)
	}
	// Raw data of FINISHED_ROUND records at the offsets a record
	// could start at: 4 bytes after the raw size's.
	round := []byte{byte(perfdata.RecordFinishedRound), 0, 0, 0, 0, 0, 8, 0}
	raw := append(make([]byte, 4), bytes.Repeat(round, 8100)...)
	recs = append(recs, &perfdata.Sample{Common: common(a, 7, 7, 5000), IP: base + 0x8000, Period: 1000, Raw: raw})
	for i := range 1500 {
		small(6000 + i)
	}
	f := synthWith(t, a, recs)
	mid := f.DataOffset + f.DataSize/2
	at, ok := f.Resync(mid, f.DataOffset+f.DataSize)
	for r := f.Records(); r.Next(); {
		if r.Offset() == at {
			t.Fatalf("Resync(%d) = %d, a record: the test wants it fooled", mid, at)
		}
	}
	if !ok {
		t.Fatalf("Resync(%d) found nothing", mid)
	}
	if _, ok, _ := loadFlat(f, Options{LeafOnly: true, Symbolizer: symbolize.New(symbolize.Options{})}, 2, 2); ok {
		t.Fatal("the flat way read parts that do not join up")
	}
	sameInParts(t, f)
}

// firstDifference names the first table where two profiles differ.
func firstDifference(got, want *profile.Profile) string {
	for i := range min(len(got.Funcs), len(want.Funcs)) {
		if !reflect.DeepEqual(got.Funcs[i], want.Funcs[i]) {
			return fmt.Sprintf("func %d: %+v, want %+v", i, got.Funcs[i], want.Funcs[i])
		}
	}
	for i := range min(len(got.Frames), len(want.Frames)) {
		if got.Frames[i] != want.Frames[i] {
			g, w := got.Frames[i], want.Frames[i]
			return fmt.Sprintf("frame %d: %+v (%s:%d in %s), want %+v (%s:%d in %s)", i,
				g, got.Strings[g.File], g.Line, got.Funcs[g.Func].Name, w, want.Strings[w.File], w.Line, want.Funcs[w.Func].Name)
		}
	}
	for i := range min(len(got.Images), len(want.Images)) {
		if got.Images[i] != want.Images[i] {
			return fmt.Sprintf("image %d: %+v, want %+v", i, got.Images[i], want.Images[i])
		}
	}
	return fmt.Sprintf("%d/%d funcs, %d/%d frames, %d/%d nodes, %d/%d strings", len(got.Funcs), len(want.Funcs),
		len(got.Frames), len(want.Frames), len(got.Nodes), len(want.Nodes), len(got.Strings), len(want.Strings))
}

// times is content's key of each entry to the times of its samples,
// sorted, which must be as many as its samples.
func times(t *testing.T, p *profile.Profile) map[string][]uint64 {
	t.Helper()
	m := map[string][]uint64{}
	for i, k := range entryKeys(p) {
		e := p.Entries[i]
		ts := e.Times
		if uint64(len(ts)) != e.Count {
			t.Fatalf("an entry of %d samples has %d times", e.Count, len(ts))
		}
		m[k] = append(m[k], ts...)
	}
	for _, ts := range m {
		slices.Sort(ts)
	}
	return m
}

// content is a profile's samples by what they are, not by ids: the whole
// stack (function, image, file, line, address per frame), the thread, CPU
// and event, to the count and period.
func content(p *profile.Profile) map[string]profile.Value {
	m := map[string]profile.Value{}
	for i, k := range entryKeys(p) {
		e := p.Entries[i]
		v := m[k]
		v.Count += e.Count
		v.Period += e.Period
		m[k] = v
	}
	return m
}

// entryKeys returns what each of p's entries is, for content and times.
func entryKeys(p *profile.Profile) []string {
	keys := make([]string, len(p.Entries))
	var stack []int32
	frames := make([]string, len(p.Frames)) // each frame formatted once
	for i, e := range p.Entries {
		var b strings.Builder
		stack = p.Stack(stack[:0], e.Stack)
		for _, n := range stack {
			if frames[n] == "" {
				fr := p.Frames[n]
				fn := p.Funcs[fr.Func]
				frames[n] = fmt.Sprintf("%s|%s|%s:%d|%#x;", fn.Name, p.Images[fn.Image].Name, p.Strings[fr.File], fr.Line, fr.Addr)
			}
			b.WriteString(frames[n])
		}
		th := p.Threads[e.Thread]
		fmt.Fprintf(&b, " %d/%d %s cpu %d event %d", th.PID, th.TID, p.Strings[th.Comm], e.CPU, e.Event)
		keys[i] = b.String()
	}
	return keys
}

// TestProcessesAndClock: a recording's profile says which executable
// each process ran (through a fork and an exec too) and, from perf's CLOCK_DATA (record -k), how its
// clock reads in wall time.
func TestProcessesAndClock(t *testing.T) {
	perftest.Perf(t)
	busy := perftest.Busy(t)
	before := uint64(time.Now().UnixNano())
	f, err := perfdata.Open(perftest.Record(t, "clock.data", "-k", "mono", "-F", "4000", "--", busy, "100", "1", "1"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	after := uint64(time.Now().UnixNano())
	p, err := Load(f, Options{Times: true})
	if err != nil {
		t.Fatal(err)
	}
	start, ok := p.WallTime(p.StartNS)
	end, _ := p.WallTime(p.EndNS)
	if !ok || start < before || end > after {
		t.Errorf("samples at %d to %d in wall time (known: %v), want within the recording's %d to %d", start, end, ok, before, after)
	}
	exe, err := filepath.EvalSymlinks(busy)
	if err != nil {
		t.Fatal(err)
	}
	var pids []uint32
	for _, pr := range p.Processes {
		if pr.Exe == exe {
			pids = append(pids, pr.PID)
		}
	}
	// busy and the child it forks, which execs busy again.
	if len(pids) != 2 {
		t.Errorf("processes running %s: %v, want two, among %+v", exe, pids, p.Processes)
	}
}
