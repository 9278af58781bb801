package anonbind

import (
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/session"
	"github.com/jitprof/jitprof/perfdata"
)

// Prepare asks, before session.Load, about every address in anonymous
// memory that Load will look up, for the processes whose handler answers
// in batches (anon.BatchResolver: external handlers, for which each
// request is a round trip through a pipe). It reads f's samples once,
// claims the processes that have such addresses, several at a time, and
// asks each claiming handler in batches; Resolve then answers those
// addresses from memory, so the parallel loader never waits on a pipe.
// An address Prepare did not see is still resolved when Load asks.
//
// leafOnly must be Load's Options.LeafOnly: without it, callchains are
// resolved too. With no external handler among the Binder's, Prepare does
// nothing: the built-in handlers answer from memory already; nor does it
// for a stream (pipe mode), which can be read only once.
func (b *Binder) Prepare(f *perfdata.File, tl *session.Timeline, leafOnly bool) {
	if f.Pipe || !slices.ContainsFunc(b.opts.Handlers, anon.IsExternal) {
		return
	}
	byPID := anonQueries(f, tl, leafOnly)
	pids := make([]uint32, 0, len(byPID))
	for pid := range byPID {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	// Handler processes mostly wait on each other's pipes: more of them
	// than cores keeps the cores busy.
	work := make(chan uint32)
	var wg sync.WaitGroup
	for range min(len(pids), 2*runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pid := range work {
				st := b.proc(pid)
				if br, ok := st.r.(anon.BatchResolver); ok {
					st.prepare(br, byPID[pid])
				}
			}
		}()
	}
	for _, pid := range pids {
		work <- pid
	}
	close(work)
	wg.Wait()
}

// prepare asks br about qs, a batch at a time, and keeps the answers.
func (st *procState) prepare(br anon.BatchResolver, qs []anon.Query) {
	slices.SortFunc(qs, cmpQuery)
	qs = slices.Compact(qs)
	ans := make([]int32, len(qs))
	index := map[symKey]int32{}
	var syms []anon.Symbol
	for lo := 0; lo < len(qs); lo += anon.MaxBatch {
		batch := qs[lo:min(lo+anon.MaxBatch, len(qs))]
		for i, s := range br.ResolveBatch(batch) {
			if !s.Found() {
				ans[lo+i] = -1
				continue
			}
			// Keep one copy of each answer: a process has many samples
			// in each function.
			k := symKey{start: s.Start, size: s.Size, gen: s.Gen, name: s.Name}
			if len(s.Ambiguous) > 0 {
				k.name = "\x00" + s.Ambiguous[0]
			}
			j, ok := index[k]
			if !ok {
				j = int32(len(syms))
				index[k] = j
				syms = append(syms, s)
			}
			ans[lo+i] = j
		}
	}
	st.qs, st.ans, st.syms = qs, ans, syms
}

// anonQueries reads f's samples and returns, by process, the addresses in
// anonymous memory that session.Load looks up, at their times: each
// sample's user-mode address and, unless leafOnly, the user-mode
// addresses of its callchain.
func anonQueries(f *perfdata.File, tl *session.Timeline, leafOnly bool) map[uint32][]anon.Query {
	out := map[uint32][]anon.Query{}
	add := func(pid uint32, addr, time uint64) {
		if m := tl.Lookup(pid, addr, time, false); m != nil && m.Anon {
			out[pid] = append(out[pid], anon.Query{Addr: addr, Time: time})
		}
	}
	r := f.Records()
	r.SkipCallchains = leafOnly
	released := f.DataOffset
	for r.Next() {
		// Load reads the file again: keep none of it in memory.
		if off := r.Offset(); off-released >= 4<<20 {
			f.Release(perfdata.Chunk{Start: released, End: off})
			released = off
		}
		s, ok := r.Record().(*perfdata.Sample)
		if !ok {
			continue
		}
		var time uint64
		if s.Has(perfdata.SampleTime) {
			time = s.Time
		}
		mode := s.CPUMode()
		if mode == perfdata.MiscUser {
			add(s.PID, s.IP, time)
		}
		for _, ip := range s.Callchain {
			switch {
			case ip == perfdata.CallchainUser:
				mode = perfdata.MiscUser
			case ip >= perfdata.CallchainContextMax:
				mode = perfdata.MiscKernel
			case mode == perfdata.MiscUser:
				add(s.PID, ip, time)
			}
		}
	}
	// A file Load cannot read fails there, with its error; what was read
	// here is asked about, and the rest is resolved on demand.
	f.Release(perfdata.Chunk{Start: released, End: f.DataOffset + f.DataSize})
	return out
}
