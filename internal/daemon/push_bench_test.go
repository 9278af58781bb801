package daemon

import (
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/delivery"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/otlp"
	"github.com/jitprof/jitprof/internal/otlp/otlptest"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/perfdata"
)

// The machine BenchmarkPushChurn pushes from: as bench/daemon/push.sh's
// beside test runs, every CPU sampled (no callchains, as the daemon's
// default) while processes come and go all the time. A push interval is
// pushRounds rounds of a drain each 500 ms (resolveEvery): at 1 kHz on
// two CPUs, 1,000 samples a round; churnPerRound processes start each
// round and exit churnLife rounds later (480 a minute: a build or a
// test run), half the samples theirs, half of longLived processes that
// run throughout. A quarter of the samples are in the kernel.
const (
	pushRounds      = 20
	samplesPerRound = 1000
	churnPerRound   = 4
	churnLife       = 3
	longLived       = 2
	kernelShare     = 0.25
)

// benchImage is the text of an ELF file on this machine as a process
// maps it, and the places in it that samples fall in.
type benchImage struct {
	path         string
	start, end   uint64 // the text mapping
	pgoff        uint64
	places       []uint64
	positionIndp bool
}

// loadBenchImage reads the executable segment of path and picks n
// places in it.
func loadBenchImage(tb testing.TB, path string, base uint64, n int, rng *rand.Rand) *benchImage {
	f, err := elf.Open(path)
	if err != nil {
		tb.Skipf("%s: %v", path, err)
	}
	defer f.Close()
	im := &benchImage{path: path, positionIndp: f.Type == elf.ET_DYN}
	if !im.positionIndp {
		base = 0
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 {
			continue
		}
		im.start = base + p.Vaddr&^0xfff
		im.end = base + (p.Vaddr+p.Memsz+0xfff)&^0xfff
		im.pgoff = p.Off &^ 0xfff
		for range n {
			im.places = append(im.places, base+p.Vaddr+rng.Uint64N(p.Filesz))
		}
		return im
	}
	tb.Skipf("%s: no executable segment", path)
	return nil
}

// pick returns one of the image's places, the first ones more often: a
// program spends most of its time in few places.
func (im *benchImage) pick(rng *rand.Rand) uint64 {
	u := rng.Float64()
	return im.places[int(u*u*u*float64(len(im.places)))]
}

// firstGlob returns the first file the patterns match, "" for none.
func firstGlob(patterns ...string) string {
	for _, p := range patterns {
		if ms, _ := filepath.Glob(p); len(ms) > 0 {
			return ms[0]
		}
	}
	return ""
}

// kernelPlaces returns n addresses of the running kernel's text, from
// its symbols (none when they are hidden from this user).
func kernelPlaces(n int, rng *rand.Rand) []uint64 {
	data, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		return nil
	}
	var addrs []uint64
	for line := range strings.Lines(string(data)) {
		fs := strings.Fields(line)
		if len(fs) < 3 || len(fs) > 3 || (fs[1] != "t" && fs[1] != "T") {
			continue // a module's symbols, data
		}
		if a, err := strconv.ParseUint(fs[0], 16, 64); err == nil && a != 0 {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = addrs[rng.IntN(len(addrs))] + rng.Uint64N(64)
	}
	return out
}

// churn is the machine: its processes, told of to the Tracker as the
// Recorder tells it (fork, exec, mmaps), sampled into the pusher.
type churn struct {
	t      *process.Tracker
	p      *pusher
	rng    *rand.Rand
	kinds  [][]*benchImage // the images each kind of program maps
	comms  []string
	kernel []uint64
	pid    uint32
	tm     uint64 // CLOCK_MONOTONIC, ns
	procs  map[uint32]benchProc
	long   []uint32
	short  []shortProc
	attr   *perfdata.Attr
	// sent has a value for each batch the exporter took.
	sent chan int
	// given counts the samples given to the pusher, pushes the pushes
	// cut.
	given, pushes uint64
	// added, when set, is told of each sample given to the pusher.
	added func(s *perfdata.Sample)
}

// benchProc is a process of the machine: its kind, and the mappings of
// its images, as ingest finds a sample's (add's argument).
type benchProc struct {
	kind int
	maps []*process.Mapping
}

type shortProc struct {
	pid   uint32
	exits int // the round it exits in
}

// start starts a process of kind k.
func (c *churn) start(k int) uint32 {
	c.pid++
	pid := c.pid
	c.tm += 1000
	c.t.Fork(pid, 1, pid, 1, c.tm)
	c.t.SetComm(pid, pid, c.tm, c.comms[k], true)
	bp := benchProc{kind: k}
	for _, im := range c.kinds[k] {
		c.t.Map(process.Mapping{PID: pid, Start: im.start, End: im.end, Pgoff: im.pgoff, Path: im.path, Time: c.tm, Exec: true})
	}
	for _, im := range c.kinds[k] {
		bp.maps = append(bp.maps, c.t.Lookup(pid, im.start, c.tm, false))
	}
	if c.procs == nil {
		c.procs = map[uint32]benchProc{}
	}
	c.procs[pid] = bp
	return pid
}

// round is one drain of the rings: processes start and exit, and the
// round's samples go to the pusher. Exits are forgotten as ingest
// forgets them (a round after); the last round of an interval pushes.
func (c *churn) round(r int, push bool) {
	left := c.short[:0]
	for _, sp := range c.short {
		if sp.exits <= r {
			c.p.forgetLater(sp.pid)
			delete(c.procs, sp.pid)
			continue
		}
		left = append(left, sp)
	}
	c.short = left
	for range churnPerRound {
		k := c.rng.IntN(len(c.kinds))
		c.short = append(c.short, shortProc{c.start(k), r + churnLife})
	}
	const tick = 500 * time.Millisecond / samplesPerRound
	var s perfdata.Sample
	s.Attr = c.attr
	s.Period = 1000000
	for range samplesPerRound {
		c.tm += uint64(tick)
		var pid uint32
		if c.rng.IntN(2) == 0 {
			pid = c.long[c.rng.IntN(len(c.long))]
		} else {
			pid = c.short[c.rng.IntN(len(c.short))].pid
		}
		s.PID, s.TID, s.Time = pid, pid, c.tm
		var m *process.Mapping
		if len(c.kernel) > 0 && c.rng.Float64() < kernelShare {
			s.Misc = perfdata.MiscKernel
			s.IP = c.kernel[c.rng.IntN(len(c.kernel))]
		} else {
			s.Misc = perfdata.MiscUser
			bp := c.procs[pid]
			i := c.rng.IntN(len(bp.maps))
			s.IP, m = c.kinds[bp.kind][i].pick(c.rng), bp.maps[i]
		}
		c.p.add(&s, m)
		if c.added != nil {
			c.added(&s)
		}
	}
	c.given += samplesPerRound
	c.p.resolvedAt = time.Time{} // resolveEvery has passed: a round is 500 ms
	if push {
		c.p.cutAt = time.Time{}
	}
	c.p.endRound()
}

// interval runs the rounds of one push and waits for the batch to be
// exported.
func (c *churn) interval(tb testing.TB, r *int) {
	tb.Helper()
	for i := range pushRounds {
		c.round(*r, i == pushRounds-1)
		*r++
	}
	c.pushes++
	c.waitPush(tb)
}

// pushWait bounds the wait for a push to be spooled and exported: a push
// of this machine takes some 30 ms of CPU (bench/RESULTS.md), some ten
// times that under the race detector; a push not exported in a minute,
// on a loaded machine, will not be.
const pushWait = time.Minute

// waitPush waits for the batch of the push just cut, and fails at once
// when the pusher says it will not come: samples still held after the
// push's round (the push did not take them all, or miscounted them),
// samples dropped or not spooled, more samples spooled than were given,
// a batch the exporter refused, or one spooled that left the spool
// unexported.
func (c *churn) waitPush(tb testing.TB) {
	tb.Helper()
	if st := c.p.status(); st.Waiting != 0 {
		tb.Fatalf("push %d: the pusher holds %d samples after the push's round, not 0 (%d given so far; status %+v)",
			c.pushes, int64(st.Waiting), c.given, st)
	}
	deadline := time.NewTimer(pushWait)
	defer deadline.Stop()
	// The status is looked at every tick for what says the batch will
	// not come; the batch itself ends the wait as it comes.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-c.sent:
			return
		case <-tick.C:
			// The Sender exports a batch before it counts it sent and
			// removes it from the spool, and the spooling goroutine
			// queues it before it counts its samples: samples all
			// counted and nothing queued is a batch exported, or one
			// that will not be.
			st := c.p.status()
			switch {
			case st.DroppedSamples > 0 || st.SpoolError != "":
				tb.Fatalf("push %d: %d samples dropped, spool error %q: the push's batch will not come", c.pushes, st.DroppedSamples, st.SpoolError)
			case st.Samples > c.given:
				tb.Fatalf("push %d: %d samples spooled, %d given", c.pushes, st.Samples, c.given)
			case st.Rejected > 0 || st.LastError != "":
				tb.Fatalf("push %d: %d batches rejected, last error %q", c.pushes, st.Rejected, st.LastError)
			case st.Samples == c.given && st.Queued == 0:
				select {
				case <-c.sent:
					return
				default:
					tb.Fatalf("push %d: all %d samples spooled and none queued, but no batch was exported (status %+v)", c.pushes, c.given, st)
				}
			}
		case <-deadline.C:
			st := c.p.status()
			tb.Fatalf("push %d: no batch exported in %v: %d of the %d samples given spooled, %d batches sent (status %+v)",
				c.pushes, pushWait, st.Samples, c.given, st.Sent, st)
		}
	}
}

// cpuTime returns the CPU time this process used, user and system, in
// nanoseconds.
func cpuTime() int64 {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// signalling is an Exporter that takes every batch and says so.
type signalling chan int

func (s signalling) Export(_ context.Context, batch []byte) delivery.Result {
	s <- len(batch)
	return delivery.Result{Outcome: delivery.Sent}
}

func (s signalling) Close() error { return nil }

// BenchmarkPushChurn measures a push interval of the daemon on a machine
// whose processes come and go (churn's constants): the samples kept by
// place, resolved at exits and at the push, the push's profile cut from
// the Builder, encoded, compressed and spooled, and the batch exported.
// Ten intervals run first, so that what the pusher keeps across pushes
// (the Builder, the Symbolizer's images) is as a running daemon's. The
// programs are this test (a Go executable with its symbol table) and
// the shell with the C library and the dynamic loader (stripped: only
// their exported symbols), the executables a build or test run starts.
func BenchmarkPushChurn(b *testing.B) {
	b.Setenv("JITPROF_CACHE_DIR", b.TempDir())
	rng := rand.New(rand.NewPCG(1, 2))
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	kinds := [][]*benchImage{{loadBenchImage(b, self, 0, 400, rng)}}
	comms := []string{filepath.Base(self)[:min(15, len(filepath.Base(self)))]}
	libc := firstGlob("/lib/x86_64-linux-gnu/libc.so.6", "/lib/*/libc.so.6", "/usr/lib/*/libc.so.6", "/lib64/libc.so.6", "/usr/lib/libc.so.6")
	ld := firstGlob("/lib/x86_64-linux-gnu/ld-linux*.so.*", "/lib/*/ld-linux*.so.*", "/lib64/ld-linux*.so.*", "/usr/lib/ld-linux*.so.*")
	if sh, err := filepath.EvalSymlinks("/bin/sh"); err == nil && libc != "" && ld != "" {
		kinds = append(kinds, []*benchImage{loadBenchImage(b, sh, 0x555555554000, 150, rng),
			loadBenchImage(b, libc, 0x7f0000000000, 200, rng), loadBenchImage(b, ld, 0x7f0000400000, 30, rng)})
		comms = append(comms, filepath.Base(sh))
	}
	attr := cpuClock
	t := process.New()
	sent := make(signalling, 1)
	p := testPusher(b, t, sent)
	defer func() {
		go func() {
			for range sent {
			}
		}()
		p.close()
		close(sent)
	}()
	c := &churn{t: t, p: p, rng: rng, kinds: kinds, comms: comms, kernel: kernelPlaces(300, rng), pid: 5000000, tm: 1e9, attr: attr, sent: sent}
	for range longLived {
		c.long = append(c.long, c.start(rng.IntN(len(kinds))))
	}
	r := 0
	for range 10 {
		c.interval(b, &r)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		c.interval(b, &r)
	}
	b.StopTimer()
	// CPU time, the process's: on a loaded machine the wall clock
	// counts the time others had the CPU.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	st := p.status()
	b.ReportMetric(float64(st.SentBytes)/float64(st.Sent), "B/push")
	m := p.b.Meta()
	b.ReportMetric(float64(len(m.Nodes)+len(m.Threads)), "nodes+threads")
}

// keeping is an Exporter that keeps every batch and says so.
type keeping struct {
	signalling
	got *[][]byte
}

func (k keeping) Export(ctx context.Context, batch []byte) delivery.Result {
	*k.got = append(*k.got, slices.Clone(batch))
	return k.signalling.Export(ctx, batch)
}

// cpuClock is the attr of the tests' samples: cpu-clock at a period of
// 1 ms, with their ip, thread, time and period.
var cpuClock = &perfdata.Attr{Type: perfdata.TypeSoftware, SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod,
	Flags: perfdata.FlagSampleIDAll, SamplePeriod: 1000000, Name: "cpu-clock"}

// testPusher is a pusher of cpuClock's samples of tr's processes,
// without callchains, whose every push is spooled in a directory of the
// test's and exported to exp; it pushes when told to (cutAt).
func testPusher(tb testing.TB, tr *process.Tracker, exp delivery.Exporter) *pusher {
	tb.Helper()
	root, err := os.OpenRoot(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { root.Close() })
	p, err := newPusher(root, Push{Every: time.Hour, Delivery: delivery.Config{Endpoint: "test", Protocol: delivery.ProtocolHTTP}, Resource: otlp.Options{ServiceName: "test"}},
		exp, cpuClock, false, tr, func(uint32) (linux.Identity, bool) { return linux.Identity{}, false }, tr.Forget)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// decodeBatch decodes a batch of the spool: a gzip'd OTLP request.
func decodeBatch(t *testing.T, batch []byte) []otlptest.Sample {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(batch))
	if err != nil {
		t.Fatal(err)
	}
	req, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := otlptest.DecodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// TestPushChurn: BenchmarkPushChurn's machine, whose processes come and
// go, pushed for 8 intervals, a Builder's renewal among them: every
// sample given to the pusher arrives in the push of its interval, once,
// with its thread, at its time (the push's times are wall-clock, the
// samples' CLOCK_MONOTONIC: within a push they differ by one offset) and
// with the stack a Resolver of its own gives the sample alone as it is
// taken, whatever the places, maps and caches the pusher keeps from
// push to push.
func TestPushChurn(t *testing.T) {
	t.Setenv("JITPROF_CACHE_DIR", t.TempDir())
	rng := rand.New(rand.NewPCG(3, 4))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	kinds := [][]*benchImage{{loadBenchImage(t, self, 0, 400, rng)}}
	comms := []string{"self"}
	// A program of several images, as the benchmark's, where this
	// machine has them.
	libc := firstGlob("/lib/x86_64-linux-gnu/libc.so.6", "/lib/*/libc.so.6", "/usr/lib/*/libc.so.6", "/lib64/libc.so.6", "/usr/lib/libc.so.6")
	if sh, err := filepath.EvalSymlinks("/bin/sh"); err == nil && libc != "" {
		kinds = append(kinds, []*benchImage{loadBenchImage(t, sh, 0x555555554000, 150, rng), loadBenchImage(t, libc, 0x7f0000000000, 200, rng)})
		comms = append(comms, "sh")
	}
	attr := cpuClock
	tr := process.New()
	var got [][]byte
	sent := make(signalling, 1)
	p := testPusher(t, tr, keeping{sent, &got})
	type key struct{ pid, tid uint32 }
	var want []map[key][]uint64
	// Each sample is resolved alone as it is taken, while the Tracker
	// has its process, into a Builder of the interval's; its stack is
	// looked up by thread and time once the interval is pushed.
	ref := profile.NewBuilder()
	ref.KeepTimes()
	ref.Event(p.event)
	refRes := resolve.New(ref, tr, resolve.Options{Symbolizer: symbolize.New(symbolize.Options{}), LeafOnly: true})
	type at struct {
		key
		time uint64
	}
	c := &churn{t: tr, p: p, rng: rng, kinds: kinds, comms: comms, kernel: kernelPlaces(300, rng), pid: 5000000, tm: 1e9, attr: attr, sent: sent,
		added: func(s *perfdata.Sample) {
			w := want[len(want)-1]
			k := key{s.PID, s.TID}
			w[k] = append(w[k], s.Time)
			refRes.Add(&resolve.Sample{PID: s.PID, TID: s.TID, Time: s.Time, CPU: -1, Mode: resolve.Mode(s.Misc & perfdata.MiscCPUModeMask),
				IP: s.IP, Count: 1, Period: s.Period})
		}}
	var wantStacks []map[at]string
	refStacks := func() map[at]string {
		es := ref.TakeEntries()
		m := ref.Meta()
		out := map[at]string{}
		for _, e := range es {
			th := m.Threads[e.Thread]
			var names []string
			for _, fr := range m.Stack(nil, e.Stack) {
				f := m.Funcs[m.Frames[fr].Func]
				names = append(names, m.Images[f.Image].Name+" "+f.Name)
			}
			for _, tm := range e.Times {
				out[at{key{th.PID, th.TID}, tm}] = strings.Join(names, ";")
			}
		}
		return out
	}
	for range longLived {
		c.long = append(c.long, c.start(rng.IntN(len(kinds))))
	}
	const intervals = 8
	r := 0
	for i := range intervals {
		want = append(want, map[key][]uint64{})
		if i == intervals/2 {
			p.pushes = renewBuilderEvery - 1 // the next push renews the Builder
		}
		c.interval(t, &r)
		wantStacks = append(wantStacks, refStacks())
	}
	go func() {
		for range sent {
		}
	}()
	// Closing spools nothing (every sample was pushed) and flushes an
	// empty spool: stopFlushFor bounds its flush.
	closed := make(chan error, 1)
	go func() { closed <- p.close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(stopFlushFor + pushWait):
		t.Fatalf("the pusher did not close in %v", stopFlushFor+pushWait)
	}
	close(sent)
	if len(got) != intervals {
		t.Fatalf("%d batches for %d intervals", len(got), intervals)
	}
	for i := range intervals {
		ss := decodeBatch(t, got[i])
		have := map[key][]uint64{}
		haveStacks := map[at]string{}
		for _, s := range ss {
			pid, _ := s.Resource["process.pid"].(int64)
			tid, _ := s.Attrs["thread.id"].(int64)
			if len(s.Stack) == 0 || s.Stack[0].Name == "" {
				t.Errorf("push %d: a sample of pid %d without a leaf name", i, pid)
			}
			k := key{uint32(pid), uint32(tid)}
			have[k] = append(have[k], s.Times...)
			var names []string
			for _, fr := range s.Stack {
				names = append(names, fr.Mapping+" "+fr.Name)
			}
			for _, tm := range s.Times {
				haveStacks[at{k, tm}] = strings.Join(names, ";")
			}
		}
		var off uint64
		for k, ts := range want[i] {
			hs := have[k]
			slices.Sort(hs)
			if len(hs) != len(ts) {
				t.Errorf("push %d: thread %v: %d samples, %d given", i, k, len(hs), len(ts))
				continue
			}
			for j := range ts {
				if off == 0 {
					off = hs[j] - ts[j]
				}
				if hs[j]-ts[j] != off {
					t.Fatalf("push %d: thread %v: sample %d at %d, given at %d: not the push's offset %d", i, k, j, hs[j], ts[j], off)
				}
				if h, w := haveStacks[at{k, hs[j]}], wantStacks[i][at{k, ts[j]}]; h != w {
					t.Errorf("push %d: thread %v: the sample at %d has the stack %q, resolved alone %q", i, k, ts[j], h, w)
				}
			}
			delete(have, k)
		}
		for k, hs := range have {
			t.Errorf("push %d: thread %v: %d samples none was given", i, k, len(hs))
		}
	}
}
