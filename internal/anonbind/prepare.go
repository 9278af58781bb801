package anonbind

import (
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/jitprof/jitprof/internal/anon"
)

// Batches reports whether Prepare is worth a pass over the samples: an
// external handler is among the Binder's, for which each request is a
// round trip through a pipe. The built-in handlers answer from memory.
func (b *Binder) Batches() bool {
	return slices.ContainsFunc(b.opts.Handlers, anon.IsExternal)
}

// Prepare asks ahead about the addresses in anonymous memory, by process,
// that the resolver will look up (a source collects them in a pass of its
// own: perfdatasrc.ScanAnon), for the processes whose handler answers in
// batches (anon.BatchResolver: external handlers). It claims the
// processes that have such addresses, several at a time, and asks each
// claiming handler in batches of anon.MaxBatch; Resolve then answers
// those addresses from memory, so a parallel resolver never waits on a
// pipe. An address Prepare did not see is still resolved when asked.
func (b *Binder) Prepare(byPID map[uint32][]anon.Query) {
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
				if _, ok := st.r.(anon.BatchResolver); ok {
					st.prepare(byPID[pid])
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

// prepare asks the process's resolver about qs, a batch at a time, and
// keeps the answers.
func (st *procState) prepare(qs []anon.Query) {
	slices.SortFunc(qs, cmpQuery)
	qs = slices.Compact(qs)
	ans := make([]int32, len(qs))
	index := map[symKey]int32{}
	var syms []anon.Symbol
	for lo := 0; lo < len(qs); lo += anon.MaxBatch {
		batch := qs[lo:min(lo+anon.MaxBatch, len(qs))]
		for i, s := range anon.ResolveBatch(st.r, batch) {
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
