package daemon

import (
	"context"
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/delivery"
	"github.com/jitprof/jitprof/internal/ingest"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/otlp"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/perfdata"
)

// batches is an Exporter that takes every batch.
type batches struct {
	mu  sync.Mutex
	got [][]byte
}

func (b *batches) Export(_ context.Context, batch []byte) delivery.Result {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, slices.Clone(batch))
	return delivery.Result{Outcome: delivery.Sent}
}

func (b *batches) Close() error { return nil }

// TestPushRounds runs the daemon's Sink with a push, without root or
// events, into an Exporter that keeps the batches: the samples of the
// rounds before a push are in it, each once, at their times, the one in
// no mapping too (the session counts it as unresolved); a process that
// exited and was let go of before the next push is still named in it;
// the last samples are pushed as the daemon stops, and the spool is
// left empty.
func TestPushRounds(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the records are encoded little-endian, as the rings of this machine hold them")
	}
	const pid = 5000000 // above any pid_max: no process of the machine's
	attr := cpuClock
	d := &daemon{cfg: Config{Dir: t.TempDir(), FlushEvery: time.Hour, MaxJITData: ingest.DefaultMaxJITData, MaxJITDataPerProcess: ingest.DefaultMaxJITDataPerProcess,
		MaxSampleFiles: ingest.DefaultMaxSampleFiles, MaxSampleData: ingest.DefaultMaxSampleData,
		Push: &Push{Every: time.Hour, Delivery: delivery.Config{Endpoint: "test", Protocol: delivery.ProtocolHTTP}, Resource: otlp.Options{ServiceName: "work"}}},
		start: time.Now(), reqs: make(chan request, 1), stop: func() {}}
	procs := process.New()
	var forgot []uint32
	if err := d.open(procs, func(p uint32) { forgot = append(forgot, p); procs.Forget(p) }, attr); err != nil {
		t.Fatal(err)
	}
	exp := &batches{}
	if err := d.startPush(exp, attr, procs, func(uint32) (linux.Identity, bool) { return linux.Identity{}, false }); err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			d.close()
		}
	}()
	common := func(tm uint64) perfdata.Common {
		return perfdata.Common{Misc: perfdata.MiscUser, Attr: attr, PID: pid, TID: pid, Time: tm}
	}
	sample := func(tm, ip uint64) *perfdata.Sample {
		return &perfdata.Sample{Common: common(tm), IP: ip, Period: 1000000}
	}
	round := func(recs ...perfdata.Record) {
		t.Helper()
		for _, rec := range recs {
			raw, err := perfdata.AppendRecord(nil, rec)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Raw(raw); err != nil {
				t.Fatal(err)
			}
			procs.Take(rec)
		}
		if err := d.EndRound(nil); err != nil {
			t.Fatal(err)
		}
	}
	round(&perfdata.Mmap{Common: common(10), Version2: true, PID: pid, TID: pid, Addr: 0x400000, Len: 0x10000, Prot: 5, Ino: 42, Filename: "/usr/bin/work"},
		sample(20, 0x401000), sample(30, 0x402000), sample(40, 0x900000))
	d.push.cutAt = time.Time{}
	round(sample(50, 0x401000))
	round(sample(52, 0x403000), &perfdata.Exit{Common: common(55), PID: pid, PPID: 1, TID: pid, PTID: 1, ExitTime: 55})
	round()
	// Ingest lets go of the process a round after its exit; the push
	// resolves its samples first, once resolveEvery has passed since it
	// last did (at the push): as if it had.
	d.push.resolvedAt = time.Time{}
	round()
	if !slices.Equal(forgot, []uint32{pid}) {
		t.Errorf("forgot %v after the exit, want [%d]", forgot, pid)
	}
	var st PushStatus
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st = d.push.status(); st.Sent == 1 {
			break
		}
	}
	if st.Sent != 1 || st.Samples != 4 || st.Waiting != 1 || st.Queued != 0 || st.DroppedSamples != 0 || st.Endpoint != "test" || st.LastSuccess.IsZero() {
		t.Errorf("status after a push: %+v; want 1 batch of 4 samples sent, 1 sample waiting", st)
	}
	if err := d.close(); err != nil {
		t.Fatal(err)
	}
	closed = true

	if len(exp.got) != 2 {
		t.Fatalf("%d batches, want a push and the last one", len(exp.got))
	}
	var times [2][]uint64
	for i, want := range []int64{4, 1} {
		ss := decodeBatch(t, exp.got[i])
		var n int64
		for _, s := range ss {
			n += s.Count()
			times[i] = append(times[i], s.Times...)
			r := s.Resource
			if r["service.name"] != "work" || r["process.pid"] != int64(pid) || r["process.executable.path"] != "/usr/bin/work" {
				t.Errorf("batch %d: resource %v", i, r)
			}
		}
		if n != want {
			t.Errorf("batch %d: %d samples, want %d", i, n, want)
		}
		slices.Sort(times[i])
	}
	// The times, in wall-clock nanoseconds, keep the samples' spacing
	// (20, 30, 40, 50 and 52 ns of CLOCK_MONOTONIC), each once. Each push
	// ties the clocks anew: the second is within a millisecond.
	if len(times[0]) == 4 && len(times[1]) == 1 {
		base := times[0][0] - 20
		for i, want := range []uint64{20, 30, 40, 50} {
			if times[0][i]-base != want {
				t.Errorf("the first push's sample times %v after %d, want 20, 30, 40 and 50", times[0], base)
			}
		}
		if d := int64(times[1][0] - base - 52); d < -1e6 || d > 1e6 {
			t.Errorf("the last push's sample at %d ns, want 52 (to a millisecond)", times[1][0]-base)
		}
	} else {
		t.Errorf("sample times %v, want 4 and 1", times)
	}
	fi, err := os.Stat(filepath.Join(d.cfg.Dir, SpoolDir))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the spool directory: %v, %v", fi.Mode(), err)
	}
	if left, _ := os.ReadDir(filepath.Join(d.cfg.Dir, SpoolDir)); len(left) != 0 {
		t.Errorf("the spool holds %d files once everything was sent", len(left))
	}
}

// TestPushPIDSlots: samples of processes interleaved, among them the
// idle task's (pid 0) and processes whose pids share the low bits the
// pusher keeps recent processes by (recentPIDs), arrive each in its own
// process, as many as were taken, push after push, also when one of
// them exits between pushes.
func TestPushPIDSlots(t *testing.T) {
	t.Setenv("JITPROF_CACHE_DIR", t.TempDir())
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	attr := cpuClock
	tr := process.New()
	var got [][]byte
	sent := make(signalling, 1)
	p := testPusher(t, tr, keeping{sent, &got})
	rng := rand.New(rand.NewPCG(5, 6))
	im := loadBenchImage(t, self, 0, 20, rng)
	pids := []uint32{0, 7, 7 + uint32(len(recentPIDs{})), 7 + 2*uint32(len(recentPIDs{}))}
	mapped := map[uint32]*process.Mapping{}
	tm := uint64(1000)
	for _, pid := range pids[1:] {
		tr.Fork(pid, 1, pid, 1, tm)
		tr.SetComm(pid, pid, tm, "p"+strconv.Itoa(int(pid)), true)
		tr.Map(process.Mapping{PID: pid, Start: im.start, End: im.end, Pgoff: im.pgoff, Path: im.path, Time: tm, Exec: true})
		mapped[pid] = tr.Lookup(pid, im.start, tm, false)
	}
	kernel := kernelPlaces(10, rng)
	var want []map[uint32]int64
	interval := func(exit uint32) {
		t.Helper()
		want = append(want, map[uint32]int64{})
		for round := range 4 {
			for i := range 300 {
				pid := pids[(i+round)%len(pids)]
				s := perfdata.Sample{Common: perfdata.Common{Attr: attr, PID: pid, TID: pid, Time: tm, Misc: perfdata.MiscUser}, IP: im.pick(rng), Period: 1000000}
				m := mapped[pid]
				if pid == 0 || rng.IntN(4) == 0 {
					if len(kernel) == 0 {
						continue
					}
					s.Misc, s.IP, m = perfdata.MiscKernel, kernel[rng.IntN(len(kernel))], nil
				}
				tm += 1000
				p.add(&s, m)
				want[len(want)-1][pid]++
			}
			if round == 1 && exit != 0 {
				p.forgetLater(exit)
				p.resolvedAt = time.Time{}
				pids = slices.DeleteFunc(pids, func(pid uint32) bool { return pid == exit })
			}
			if round == 3 {
				p.cutAt = time.Time{}
			}
			p.endRound()
		}
		select {
		case <-sent:
		case <-time.After(pushWait):
			t.Fatalf("push %d not exported in %v", len(want), pushWait)
		}
	}
	interval(0)
	interval(pids[2])
	interval(0)
	go func() {
		for range sent {
		}
	}()
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	close(sent)
	if len(got) != len(want) {
		t.Fatalf("%d batches for %d pushes", len(got), len(want))
	}
	for i := range want {
		ss := decodeBatch(t, got[i])
		have := map[uint32]int64{}
		for _, s := range ss {
			pid, _ := s.Resource["process.pid"].(int64)
			have[uint32(pid)] += s.Count()
		}
		if !maps.Equal(have, want[i]) {
			t.Errorf("push %d: samples by pid %v, want %v", i, have, want[i])
		}
	}
}

// TestPlacesGroup: places.group links each sample to the next of its
// place in the order taken, each place once, in the order first met:
// samples of one key at other places (another address, thread, mode,
// mapping or callchain) are places of their own, as are places whose
// keys fall in one slot of the table.
func TestPlacesGroup(t *testing.T) {
	m1, m2 := &process.Mapping{ID: 1}, &process.Mapping{ID: 2}
	w := &waiting{words: []uint64{1, 2, 1, 3}}
	type place struct {
		key, ip   uint64
		tid       uint32
		mode      resolve.Mode
		m         *process.Mapping
		chain     int32
		chainSize int32
	}
	placesOf := []place{
		{key: 1 << 32, ip: 10, tid: 1, mode: resolve.ModeUser, m: m1},
		{key: 1 << 32, ip: 11, tid: 1, mode: resolve.ModeUser, m: m1},                         // another address
		{key: 1 << 32, ip: 10, tid: 2, mode: resolve.ModeUser, m: m1},                         // thread
		{key: 1 << 32, ip: 10, tid: 1, mode: resolve.ModeKernel},                              // mode
		{key: 1 << 32, ip: 10, tid: 1, mode: resolve.ModeUser, m: m2},                         // mapping
		{key: 1 << 32, ip: 10, tid: 1, mode: resolve.ModeUser, m: m1, chain: 0, chainSize: 2}, // callchain
		{key: 1 << 32, ip: 10, tid: 1, mode: resolve.ModeUser, m: m1, chain: 2, chainSize: 2}, // another one
		{key: 1<<32 + 1, ip: 10, tid: 1, mode: resolve.ModeUser, m: m1},                       // another key, one slot
		{key: 2 << 32, ip: 20, tid: 1, mode: resolve.ModeUser, m: m1},
	}
	rng := rand.New(rand.NewPCG(7, 8))
	want := make([][]int32, len(placesOf)) // the samples of each place, by place
	var order []int                        // each place's place in the order first met
	for i := range 200 {
		k := rng.IntN(len(placesOf))
		pl := placesOf[k]
		if len(want[k]) == 0 {
			order = append(order, k)
		}
		want[k] = append(want[k], int32(i))
		w.samples = append(w.samples, waitingSample{key: pl.key, time: uint64(i), ip: pl.ip, tid: pl.tid, mode: pl.mode, m: pl.m,
			chain: pl.chain, chainEnd: pl.chain + pl.chainSize})
	}
	var pl places
	for range 2 { // the arrays used again
		pl.group(w)
		if len(pl.firsts) != len(order) {
			t.Fatalf("%d places, want %d", len(pl.firsts), len(order))
		}
		for j, f := range pl.firsts {
			var got []int32
			for i := f; i >= 0; i = pl.next[i] {
				got = append(got, i)
			}
			if !slices.Equal(got, want[order[j]]) {
				t.Errorf("place %d met %d: samples %v, want %v", order[j], j, got, want[order[j]])
			}
		}
	}
}

// TestSpares: the spares keep at most maxSpares slices, those with the
// most room when more are put, within their bounds on room, and give
// the one with the most room first; what they count is what they hold.
func TestSpares(t *testing.T) {
	var sp spares
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range rng.Perm(100) {
		sp.put(&waiting{samples: make([]waitingSample, 0, n+1), words: make([]uint64, 0, 2*(n+1)), jit: true})
	}
	if len(sp.ws) != maxSpares {
		t.Fatalf("%d spares kept of 100, want %d", len(sp.ws), maxSpares)
	}
	samples, words := 0, 0
	for _, w := range sp.ws {
		samples += cap(w.samples)
		words += cap(w.words)
		if w.jit {
			t.Errorf("a spare still says its samples were in JIT code")
		}
	}
	if samples != sp.samples || words != sp.words {
		t.Errorf("spares count %d samples and %d words of room, hold %d and %d", sp.samples, sp.words, samples, words)
	}
	for want := 100; want > 100-maxSpares; want-- {
		if w := sp.get(); cap(w.samples) != want {
			t.Fatalf("get gave a spare of room %d, want %d (the most left)", cap(w.samples), want)
		}
	}
	if w := sp.get(); len(sp.ws) != 0 || cap(w.samples) != 0 || sp.samples != 0 || sp.words != 0 {
		t.Errorf("once all were given: %d left, a new one of room %d, %d samples and %d words counted", len(sp.ws), cap(w.samples), sp.samples, sp.words)
	}
	sp.put(&waiting{samples: make([]waitingSample, 0, maxSpareSamples+1)})
	if len(sp.ws) != 0 {
		t.Errorf("a spare past the bound on room was kept")
	}
}
