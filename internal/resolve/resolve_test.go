package resolve_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perfdatasrc"
	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/perfdata"
)

const (
	base   = 0x400000
	jit    = 0x7f0000000000
	kernel = 0xffffffff81000000
)

// story is what happens in a recording, told once and written two ways:
// as perf_event records in a perf.data file, and as calls on a Tracker
// and a Resolver, the way a source that is not perf.data feeds them.
type story struct {
	busy string // the ELF image processes run
	// events in time order; a sample's callchain is the kernel's format
	events []storyEvent
}

type storyEvent struct {
	time      uint64
	kind      string // "comm", "exec", "fork", "map", "kmap", "sample"
	pid, ppid uint32
	tid       uint32
	comm      string
	addr, len uint64
	path      string
	mode      resolve.Mode
	ip        uint64
	chain     []uint64
	period    uint64
}

func newStory(t *testing.T) story {
	busy := perftest.Busy(t)
	user := func(tm uint64, pid, tid uint32, ip uint64, chain ...uint64) storyEvent {
		return storyEvent{time: tm, kind: "sample", pid: pid, tid: tid, mode: resolve.ModeUser, ip: ip, chain: chain, period: 1000 + tm}
	}
	return story{busy: busy, events: []storyEvent{
		{time: 1, kind: "kmap", addr: kernel, len: 0x1000000, path: "[kernel.kallsyms]_text"},
		{time: 2, kind: "comm", pid: 10, tid: 10, comm: "app"},
		{time: 3, kind: "map", pid: 10, addr: base, len: 1 << 20, path: busy},
		{time: 4, kind: "map", pid: 10, addr: jit, len: 0x100000, path: "//anon"},
		user(10, 10, 10, base+0x1200, resolve.ContextUser, base+0x1200, base+0x1300, base+0x99999999),
		user(11, 10, 10, jit+0x40, resolve.ContextUser, jit+0x40, base+0x1300),
		{time: 12, kind: "sample", pid: 10, tid: 10, mode: resolve.ModeKernel, ip: kernel + 0x150,
			chain: []uint64{resolve.ContextKernel, kernel + 0x150, resolve.ContextUser, base + 0x1300}, period: 7},
		{time: 20, kind: "fork", pid: 11, ppid: 10, tid: 11},
		user(21, 11, 11, base+0x1200), // the parent's image, before the exec
		{time: 22, kind: "exec", pid: 11, tid: 11, comm: "child"},
		{time: 23, kind: "map", pid: 11, addr: base + 0x200000, len: 1 << 20, path: busy},
		user(24, 11, 11, base+0x200000+0x1200),
		user(25, 11, 11, base+0x1200),                        // the old image until the new one maps there
		{time: 26, kind: "fork", pid: 10, ppid: 10, tid: 12}, // a thread
		{time: 27, kind: "comm", pid: 10, tid: 12, comm: "worker"},
		user(28, 10, 12, jit+0x80),
		user(29, 10, 12, jit+0x80),
		user(30, 99, 99, 0x1234), // a process nothing told of
	}}
}

// fakeJIT names JIT code by its 64-byte block and the time, or the
// generation when asked by sequence number.
type fakeJIT struct{}

func (fakeJIT) Resolve(pid uint32, addr, time uint64) (resolve.AnonFrame, bool) {
	return resolve.AnonFrame{Func: fmt.Sprintf("jit_%x@%d", addr&^63, time), Image: "[JIT fake]", Start: addr &^ 63}, true
}

func (fakeJIT) ResolveSeq(pid uint32, addr, seq uint64) (resolve.AnonFrame, bool) {
	return resolve.AnonFrame{Func: fmt.Sprintf("jit_%x [gen %d]", addr&^63, seq), Image: "[JIT fake]", Start: addr &^ 63}, true
}

// genJIT names JIT code by its 64-byte block and a generation of every
// 5 ns of time, as JIT data with times does (Held: the answer holds
// from the generation's load to its unload); asks counts its answers.
type genJIT struct{ asks *int }

func (g genJIT) Resolve(pid uint32, addr, time uint64) (resolve.AnonFrame, bool) {
	*g.asks++
	gen := time / 5
	return resolve.AnonFrame{Func: fmt.Sprintf("jit_%x [gen %d]", addr&^63, gen), Image: "[JIT gen]", Start: addr &^ 63,
		Gen: gen, Load: gen * 5, Unload: gen*5 + 5, Held: true}, true
}

// symbolizer finds the kernel in a kallsyms of three symbols.
func symbolizer(t *testing.T) *symbolize.Symbolizer {
	kallsyms := filepath.Join(t.TempDir(), "kallsyms")
	text := fmt.Sprintf("%x T _text\n%x T schedule\n%x t helper\t[mod]\n", uint64(kernel), uint64(kernel+0x100), uint64(kernel+0x200))
	if err := os.WriteFile(kallsyms, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return symbolize.New(symbolize.Options{Kallsyms: kallsyms, DebugDirs: []string{}, BuildIDCaches: []string{}})
}

// perfData writes the story as a perf.data file.
func (s story) perfData(t *testing.T) *perfdata.File {
	a := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod | perfdata.SampleCallchain,
		Flags:      perfdata.FlagSampleIDAll,
		IDs:        []uint64{1},
	}
	var recs []perfdata.Record
	for _, e := range s.events {
		c := perfdata.Common{Attr: a, PID: e.pid, TID: e.tid, Time: e.time, Misc: perfdata.MiscUser}
		switch e.kind {
		case "comm", "exec":
			r := &perfdata.Comm{Common: c, PID: e.pid, TID: e.tid, Comm: e.comm}
			if e.kind == "exec" {
				r.Misc |= perfdata.MiscCommExec
			}
			recs = append(recs, r)
		case "fork":
			recs = append(recs, &perfdata.Fork{Common: c, PID: e.pid, PPID: e.ppid, TID: e.tid, PTID: e.ppid, ForkTime: e.time})
		case "map":
			recs = append(recs, &perfdata.Mmap{Common: c, PID: e.pid, TID: e.pid, Addr: e.addr, Len: e.len, Filename: e.path})
		case "kmap":
			c.PID, c.TID, c.Misc = process.KernelPID, 0, perfdata.MiscKernel
			recs = append(recs, &perfdata.Mmap{Common: c, PID: process.KernelPID, Addr: e.addr, Len: e.len, Pgoff: e.addr, Filename: e.path})
		case "sample":
			c.Misc = uint16(e.mode)
			recs = append(recs, &perfdata.Sample{Common: c, IP: e.ip, Period: e.period, Callchain: e.chain})
		}
	}
	return perftest.OpenData(t, []*perfdata.Attr{a}, recs)
}

// inMemory feeds the story to a Tracker and a Resolver, as a source
// that is not perf.data would, and returns the profile.
func (s story) inMemory(opts resolve.Options, bySeq bool) *profile.Profile {
	tr := process.New()
	b := profile.NewBuilder()
	ev := b.Event(profile.Event{Name: "cpu-clock", Period: 1000})
	r := resolve.New(b, tr, opts)
	meta := b.Meta()
	for _, e := range s.events {
		switch e.kind {
		case "comm", "exec":
			tr.SetComm(e.pid, e.tid, e.time, e.comm, e.kind == "exec")
		case "fork":
			tr.Fork(e.pid, e.ppid, e.tid, e.ppid, e.time)
		case "map":
			tr.Map(process.Mapping{PID: e.pid, Start: e.addr, End: e.addr + e.len, Path: e.path, Time: e.time, Exec: true, Anon: e.path == "//anon"})
		case "kmap":
			tr.Map(process.Mapping{Kernel: true, Start: e.addr, End: e.addr + e.len, Pgoff: e.addr, Path: e.path, Time: e.time, Exec: true})
		case "sample":
			if meta.StartNS == 0 || e.time < meta.StartNS {
				meta.StartNS = e.time
			}
			meta.EndNS = max(meta.EndNS, e.time)
			smp := resolve.Sample{PID: e.pid, TID: e.tid, Time: e.time, CPU: -1, Mode: e.mode, IP: e.ip, Callchain: e.chain,
				Event: ev, Count: 1, Period: e.period}
			if opts.LeafOnly {
				smp.Callchain = nil
			}
			if bySeq && e.ip >= jit && e.ip < jit+0x100000 {
				smp.BySeq, smp.Seq = true, e.time%3
			}
			r.Add(&smp)
		}
	}
	return b.Profile()
}

// TestInMemorySource: a source that is not perf.data, feeding the
// Tracker and the Resolver sample by sample as they happen, gets the
// profile the perf.data replay of the same recording gets, ids and all.
// (The replay is given its timeline, so that a flat profile too is read
// sample by sample rather than summed by place first, which interns in
// another order.)
func TestInMemorySource(t *testing.T) {
	s := newStory(t)
	f := s.perfData(t)
	tl, err := perfdatasrc.BuildTimeline(f)
	if err != nil {
		t.Fatal(err)
	}
	sym := symbolizer(t)
	for _, o := range []resolve.Options{{}, {LeafOnly: true}, {Lines: true, Addresses: true}, {Anon: fakeJIT{}}, {Anon: fakeJIT{}, LeafOnly: true}, {SparseMappings: true}} {
		t.Run(fmt.Sprintf("%+v", o), func(t *testing.T) {
			o.Symbolizer = sym
			// SparseMappings (a live view's) keeps the same images
			// otherwise: the replay, without, is the same profile.
			want, err := perfdatasrc.Load(f, perfdatasrc.Options{Timeline: tl, Symbolizer: sym, Anon: o.Anon, Lines: o.Lines, Addresses: o.Addresses, LeafOnly: o.LeafOnly})
			if err != nil {
				t.Fatal(err)
			}
			got := s.inMemory(o, false)
			got.Events[0] = want.Events[0] // named from the file's attr
			got.Processes = want.Processes // the replay's, from its Tracker
			if !reflect.DeepEqual(got, want) {
				t.Errorf("in memory:\n%s\nfrom perf.data:\n%s", dump(got), dump(want))
			}
			if len(want.Entries) < 7 {
				t.Errorf("%d entries: the story resolves to too little to tell", len(want.Entries))
			}
		})
	}
}

// TestBySeq: JIT code a sample names by sequence number (a sample file's
// key) is named by the SeqResolver; by time otherwise.
func TestBySeq(t *testing.T) {
	p := newStory(t).inMemory(resolve.Options{Symbolizer: symbolizer(t), Anon: fakeJIT{}}, true)
	var names []string
	for _, e := range p.Entries {
		if fn := p.FuncOf(p.Nodes[e.Stack].Frame); p.Images[fn.Image].Name == "[JIT fake]" {
			names = append(names, fn.Name)
		}
	}
	want := []string{"jit_7f0000000040 [gen 2]", "jit_7f0000000080 [gen 1]", "jit_7f0000000080 [gen 2]"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("JIT leaves %q, want %q", names, want)
	}
}

// TestLateRecord: a live source tells the Tracker of a mapping after a
// sample was resolved, with an earlier time (another CPU's ring drained
// later); the Resolver must not answer later samples from what it
// cached before.
func TestLateRecord(t *testing.T) {
	busy := perftest.Busy(t)
	tr := process.New()
	b := profile.NewBuilder()
	b.Event(profile.Event{Name: "cpu-clock"})
	r := resolve.New(b, tr, resolve.Options{Symbolizer: symbolizer(t), LeafOnly: true})
	leaf := func(tm uint64) string {
		s := resolve.Sample{PID: 1, TID: 1, Time: tm, Mode: resolve.ModeUser, IP: base + 0x1200, Count: 1}
		r.Add(&s)
		p := b.Meta()
		fn := p.FuncOf(p.Nodes[len(p.Nodes)-1].Frame) // the stack just made
		return p.Images[fn.Image].Name
	}
	tr.Map(process.Mapping{PID: 1, Start: base, End: base + 1<<20, Path: busy, Time: 10, Exec: true})
	if got := leaf(100); got != busy {
		t.Fatalf("sample at 100 in %q", got)
	}
	tr.Map(process.Mapping{PID: 1, Start: base, End: base + 1<<20, Path: "/late", Time: 5, Exec: true})
	if got := leaf(7); got != "/late" {
		t.Errorf("sample at 7, after a mapping at 5 came late: in %q, want /late", got)
	}
}

func dump(p *profile.Profile) string {
	var s string
	var stack []int32
	for _, e := range p.Entries {
		stack = p.Stack(stack[:0], e.Stack)
		line := fmt.Sprintf("%d/%d cpu %d:", p.Threads[e.Thread].PID, p.Threads[e.Thread].TID, e.CPU)
		for _, fr := range stack {
			line += " " + p.FuncOf(fr).Name
		}
		s += fmt.Sprintf("%s = %d %d\n", line, e.Count, e.Period)
	}
	return s + fmt.Sprintf("images %d funcs %d frames %d nodes %d threads %d times %d-%d", len(p.Images), len(p.Funcs), len(p.Frames), len(p.Nodes), len(p.Threads), p.StartNS, p.EndNS)
}

// TestAddTimes: the samples of a place added once with their times,
// which AddTimes splits where Span says the place resolves another way
// (an exec, a new name) and where JIT code named by time changes, give
// the profile of the same samples added one by one: the same stacks,
// threads, counts, periods and times; also when each sample comes with
// the mapping that held it (Sample.Mapping, the daemon's push), its
// places then told apart by mapping. JIT data that says when its answer
// holds (genJIT) is asked once for the samples of a place in that span;
// answers that do not say (fakeJIT, an external handler's) are asked for
// at each time.
func TestAddTimes(t *testing.T) {
	s := newStory(t)
	// JIT code sampled across its generations: 31 and 33 in one, 36 and
	// 38 in the next, 38 twice.
	for _, tm := range []uint64{31, 33, 36, 38, 38} {
		s.events = append(s.events, storyEvent{time: tm, kind: "sample", pid: 10, tid: 12, mode: resolve.ModeUser, ip: jit + 0xc0,
			chain: []uint64{resolve.ContextUser, jit + 0xc0, base + 0x1300}, period: 1000 + tm})
	}
	type jitCase struct {
		name string
		anon func(asks *int) resolve.AnonResolver
	}
	for _, tc := range []struct {
		leafOnly, mapped bool
		jitCase
	}{
		{false, false, jitCase{"fake", func(*int) resolve.AnonResolver { return fakeJIT{} }}},
		{true, false, jitCase{"fake", func(*int) resolve.AnonResolver { return fakeJIT{} }}},
		{false, true, jitCase{"fake", func(*int) resolve.AnonResolver { return fakeJIT{} }}},
		{true, true, jitCase{"fake", func(*int) resolve.AnonResolver { return fakeJIT{} }}},
		{false, true, jitCase{"gen", func(asks *int) resolve.AnonResolver { return genJIT{asks} }}},
		{true, true, jitCase{"gen", func(asks *int) resolve.AnonResolver { return genJIT{asks} }}},
	} {
		leafOnly := tc.leafOnly
		var asksOne, asksGrouped int
		opts := resolve.Options{Symbolizer: symbolizer(t), Anon: tc.anon(&asksOne), LeafOnly: leafOnly}
		tr := process.New()
		var samples []resolve.Sample
		for _, e := range s.events {
			switch e.kind {
			case "comm", "exec":
				tr.SetComm(e.pid, e.tid, e.time, e.comm, e.kind == "exec")
			case "fork":
				tr.Fork(e.pid, e.ppid, e.tid, e.ppid, e.time)
			case "map":
				tr.Map(process.Mapping{PID: e.pid, Start: e.addr, End: e.addr + e.len, Path: e.path, Time: e.time, Exec: true, Anon: e.path == "//anon"})
			case "kmap":
				tr.Map(process.Mapping{Kernel: true, Start: e.addr, End: e.addr + e.len, Pgoff: e.addr, Path: e.path, Time: e.time, Exec: true})
			case "sample":
				sm := resolve.Sample{PID: e.pid, TID: e.tid, Time: e.time, CPU: -1, Mode: e.mode, IP: e.ip, Callchain: e.chain, Count: 1, Period: e.period}
				if leafOnly {
					sm.Callchain = nil
				}
				samples = append(samples, sm)
			}
		}
		builder := func() *profile.Builder {
			b := profile.NewBuilder()
			b.KeepTimes()
			b.Event(profile.Event{Name: "cpu-clock", Period: 1000})
			return b
		}
		b1 := builder()
		r1 := resolve.New(b1, tr, opts)
		for i := range samples {
			r1.Add(&samples[i])
		}
		one := b1.Profile()

		type place struct {
			s     resolve.Sample
			times []uint64
		}
		var places []*place
		byKey := map[string]*place{}
		b2 := builder()
		opts.Anon = tc.anon(&asksGrouped)
		r2 := resolve.New(b2, tr, opts)
		jitSamples := 0
		for _, sm := range samples {
			if inAnon(tr, &sm) {
				jitSamples++
			}
			if tc.mapped && sm.Mode == resolve.ModeUser {
				sm.Mapping = tr.Lookup(sm.PID, sm.IP, sm.Time, false)
			}
			k := fmt.Sprint(sm.PID, sm.TID, sm.Mode, sm.IP, sm.Callchain)
			if sm.Mapping != nil {
				k += fmt.Sprint(" mapping ", sm.Mapping.ID)
			}
			pl := byKey[k]
			if pl == nil {
				pl = &place{s: sm}
				pl.s.Period = 0
				byKey[k] = pl
				places = append(places, pl)
			}
			pl.s.Period += sm.Period
			pl.times = append(pl.times, sm.Time)
		}
		splits := 0
		for _, pl := range places {
			sm := pl.s
			if sp := r2.Span(sm.PID, sm.TID, pl.times[0]); pl.times[len(pl.times)-1] >= sp.To {
				splits++
			}
			r2.AddTimes(&sm, pl.times)
		}
		grouped := b2.Profile()
		if a, g := canonical(one), canonical(grouped); !reflect.DeepEqual(a, g) {
			t.Errorf("%+v: one by one:\n%v\nby place:\n%v", tc, a, g)
		}
		if !slices.ContainsFunc(places, func(pl *place) bool { return len(pl.times) > 1 }) || splits == 0 {
			t.Errorf("%+v: the story has no place sampled twice (%d places), or none that resolves two ways (%d)", tc, len(places), splits)
		}
		if tc.name == "gen" && (asksGrouped >= asksOne || asksOne < jitSamples) {
			t.Errorf("%+v: JIT data asked %d times by place, %d one by one for %d samples in or called from JIT code: want fewer by place",
				tc, asksGrouped, asksOne, jitSamples)
		}
		t.Logf("%+v: %d samples, %d places, %d split where the place resolves another way; JIT data asked %d times one by one, %d by place",
			tc, len(samples), len(places), splits, asksOne, asksGrouped)
	}
}

// canonical is a profile's entries as text: thread, stack of names,
// count, and the sorted times; and the total period.
func canonical(p *profile.Profile) []string {
	var out []string
	var period uint64
	for _, e := range p.Entries {
		th := p.Threads[e.Thread]
		var names []string
		for _, fr := range p.Stack(nil, e.Stack) {
			names = append(names, p.FuncOf(fr).Name)
		}
		ts := slices.Clone(e.Times)
		slices.Sort(ts)
		out = append(out, fmt.Sprintf("%d/%d %s %v: %d at %v", th.PID, th.TID, p.Strings[th.Comm], names, e.Count, ts))
		period += e.Period
	}
	slices.Sort(out)
	return append(out, fmt.Sprint("period ", period))
}

// inAnon says whether s, or with a callchain a user frame of it, is in
// anonymous memory.
func inAnon(tr *process.Tracker, s *resolve.Sample) bool {
	ips := []uint64{s.IP}
	user := s.Mode == resolve.ModeUser
	if !user {
		ips = nil
	}
	for _, ip := range s.Callchain {
		if ip >= resolve.ContextMax {
			user = ip == resolve.ContextUser
		} else if user {
			ips = append(ips, ip)
		}
	}
	for _, ip := range ips {
		if m := tr.Lookup(s.PID, ip, s.Time, false); m != nil && m.Anon {
			return true
		}
	}
	return false
}

// TestCachesAcrossChanges: a Resolver that lives while its Tracker is
// told of processes coming and going (the daemon's push, jitprof top)
// keeps what it cached of a process while others change, and drops it
// when the process's own answers may change: a new mapping, a name, an
// exec, a record that arrives late, a change in the parent a child was
// forked from, a pid forgotten and used again. After every record, all
// the samples so far are resolved again, once by the Resolver that lives
// on and once by a new one; the two must name every sample alike.
func TestCachesAcrossChanges(t *testing.T) {
	s := newStory(t)
	busy := s.busy
	user := func(tm uint64, pid, tid uint32, ip uint64, chain ...uint64) storyEvent {
		return storyEvent{time: tm, kind: "sample", pid: pid, tid: tid, mode: resolve.ModeUser, ip: ip, chain: chain, period: 1}
	}
	events := append(slices.Clone(s.events),
		storyEvent{time: 40, kind: "comm", pid: 13, tid: 13, comm: "other"},
		storyEvent{time: 41, kind: "map", pid: 13, addr: base, len: 1 << 20, path: busy},
		user(42, 13, 13, base+0x1200),
		user(43, 10, 10, base+0x1200, resolve.ContextUser, base+0x1200, base+0x1300),
		storyEvent{time: 44, kind: "fork", pid: 14, ppid: 10, tid: 14},
		user(45, 14, 14, base+0x1300), // the parent's image at the fork
		storyEvent{time: 46, kind: "comm", pid: 10, tid: 12, comm: "renamed"},
		user(47, 10, 12, base+0x1200),
		// Late: the parent had mapped another image over busy's
		// first page before the fork.
		storyEvent{time: 43, kind: "map", pid: 10, addr: base, len: 0x2000, path: "/late"},
		user(48, 14, 14, base+0x1300),
		storyEvent{time: 49, kind: "forget", pid: 11},
		storyEvent{time: 50, kind: "comm", pid: 11, tid: 11, comm: "reused"},
		storyEvent{time: 51, kind: "map", pid: 11, addr: base + 0x200000, len: 1 << 20, path: "/other"},
		user(52, 11, 11, base+0x200000+0x1200),
		storyEvent{time: 53, kind: "map", pid: 13, addr: jit, len: 0x1000, path: "//anon"},
		user(54, 13, 13, base+0x1200),
		user(55, 10, 10, base+0x1200),
	)
	for _, o := range []resolve.Options{{}, {LeafOnly: true}, {Anon: fakeJIT{}}, {Anon: fakeJIT{}, LeafOnly: true, SparseMappings: true}} {
		t.Run(fmt.Sprintf("%+v", o), func(t *testing.T) {
			o.Symbolizer = symbolizer(t)
			tr := process.New()
			builder := func() *profile.Builder {
				b := profile.NewBuilder()
				b.Event(profile.Event{Name: "cpu-clock", Period: 1000})
				return b
			}
			bLive := builder()
			live := resolve.New(bLive, tr, o)
			var samples []resolve.Sample
			var want []string
			for round, e := range events {
				switch e.kind {
				case "comm", "exec":
					tr.SetComm(e.pid, e.tid, e.time, e.comm, e.kind == "exec")
				case "fork":
					tr.Fork(e.pid, e.ppid, e.tid, e.ppid, e.time)
				case "map":
					tr.Map(process.Mapping{PID: e.pid, Start: e.addr, End: e.addr + e.len, Path: e.path, Time: e.time, Exec: true, Anon: e.path == "//anon"})
				case "kmap":
					tr.Map(process.Mapping{Kernel: true, Start: e.addr, End: e.addr + e.len, Pgoff: e.addr, Path: e.path, Time: e.time, Exec: true})
				case "forget":
					// The Resolver that lives on forgets it too,
					// as the push does; the process's samples are
					// gone with it (the push resolved them before).
					tr.Forget(e.pid)
					live.Forget(e.pid)
					samples = slices.DeleteFunc(samples, func(sm resolve.Sample) bool { return sm.PID == e.pid })
				case "sample":
					sm := resolve.Sample{PID: e.pid, TID: e.tid, Time: e.time, Mode: e.mode, IP: e.ip, Callchain: e.chain, Count: 1, Period: 1}
					if o.LeafOnly {
						sm.Callchain = nil
					}
					samples = append(samples, sm)
				}
				// Each round's samples under a CPU of their own,
				// so that rounds stay apart in the profile.
				fresh := builder()
				r := resolve.New(fresh, tr, o)
				for i := range samples {
					sm := samples[i]
					sm.CPU = int32(round)
					r.Add(&sm)
					live.Add(&sm)
				}
				want = append(want, byCPU(fresh.Profile())...)
			}
			got := byCPU(bLive.Profile())
			slices.Sort(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the Resolver that lived on:\n%s\nnew ones:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if len(got) < 100 {
				t.Errorf("%d entries: too few to tell", len(got))
			}
		})
	}
}

// byCPU is a profile's entries as text, sorted: CPU, thread, stack of
// images and names, count.
func byCPU(p *profile.Profile) []string {
	var out []string
	for _, e := range p.Entries {
		th := p.Threads[e.Thread]
		var names []string
		for _, fr := range p.Stack(nil, e.Stack) {
			fn := p.FuncOf(fr)
			names = append(names, p.Images[fn.Image].Name+":"+fn.Name)
		}
		out = append(out, fmt.Sprintf("%3d %d/%d %s %v: %d", e.CPU, th.PID, th.TID, p.Strings[th.Comm], names, e.Count))
	}
	slices.Sort(out)
	return out
}
