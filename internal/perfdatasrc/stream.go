package perfdatasrc

import (
	"fmt"
	"slices"

	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/unwind"
	"github.com/jitprof/jitprof/perfdata"
)

// A pipe-mode stream (perf record -o - | jitprof report -i -) can be
// read once, and a sample resolves against the mappings and names of
// its time, which records later in the stream can still change (those
// of other CPUs come a buffer late). So loadStream reads the stream
// once, as loadFlat's first pass reads a file: it takes the timeline's
// records, and sums the samples of each place (where a sample was and,
// for callchains, the chain), keeping for each sample only its place,
// time and period. Then, with the whole timeline, it resolves each place
// once, or sample by sample where its samples straddle a change of their
// thread or process, or JIT names (which change at any time) or each
// sample's time are asked for: exactly what reading a file in one part
// gives.

// streamKey is a place: flatKey's fields and the sample's callchain.
type streamKey struct {
	flatKey
	chain int32 // index in streamReader.spans; -1 without callchains
}

// streamPlace sums the samples of one place.
type streamPlace struct {
	key           streamKey
	count, period uint64
	tmin, tmax    uint64
}

// streamSample is what is kept of one sample.
type streamSample struct {
	place  int32
	time   uint64
	period uint64
}

// streamReader is the one pass over a stream.
type streamReader struct {
	places  []streamPlace
	index   map[streamKey]int32
	samples []streamSample
	// The distinct callchains: their words in arena, by spans, found
	// by their hash.
	arena  []uint64
	spans  [][2]int
	chains map[uint64][]int32
}

// chain interns c and returns its index.
func (sr *streamReader) chain(c []uint64) int32 {
	h := uint64(len(c))
	for _, w := range c {
		h = (h ^ w) * 0x9e3779b97f4a7c15
		h ^= h >> 29
	}
	for _, id := range sr.chains[h] {
		if sp := sr.spans[id]; slices.Equal(sr.arena[sp[0]:sp[0]+sp[1]], c) {
			return id
		}
	}
	id := int32(len(sr.spans))
	sr.spans = append(sr.spans, [2]int{len(sr.arena), len(c)})
	sr.arena = append(sr.arena, c...)
	sr.chains[h] = append(sr.chains[h], id)
	return id
}

func (sr *streamReader) add(s *perfdata.Sample, chain []uint64, leafOnly bool) {
	k := streamKey{flatKeyOf(s), -1}
	if !leafOnly {
		k.chain = sr.chain(chain)
	}
	id, ok := sr.index[k]
	if !ok {
		id = int32(len(sr.places))
		sr.index[k] = id
		sr.places = append(sr.places, streamPlace{key: k, tmin: ^uint64(0)})
	}
	pl := &sr.places[id]
	tm := s.Timestamp()
	pl.count++
	pl.period += s.Period
	pl.tmin, pl.tmax = min(pl.tmin, tm), max(pl.tmax, tm)
	sr.samples = append(sr.samples, streamSample{id, tm, s.Period})
}

// sample fills out with the samples of place k at time tm, with count
// and period.
func (sr *streamReader) sample(out *resolve.Sample, k streamKey, events *eventIndex, tm, count, period uint64) {
	*out = resolve.Sample{
		PID: uint32(k.pidTID >> 32), TID: uint32(k.pidTID), Time: tm,
		CPU: int32(uint32(k.cpuMode >> 16)), Mode: resolve.Mode(k.cpuMode & perfdata.MiscCPUModeMask),
		IP: k.ip, Event: events.of(k.attr), Count: count, Period: period,
	}
	if k.chain >= 0 {
		sp := sr.spans[k.chain]
		out.Callchain = sr.arena[sp[0] : sp[0]+sp[1]]
	}
}

// loadStream is Load for a pipe-mode stream, in one pass.
func loadStream(f *perfdata.File, opts Options) (*profile.Profile, error) {
	tl := newTimeline(f)
	sr := &streamReader{index: map[streamKey]int32{}, chains: map[uint64][]int32{}}
	if opts.Symbolizer == nil {
		opts.Symbolizer = symbolize.New(symbolize.Options{SymbolCache: true})
	}
	// A stream's user stacks are unwound in the pass, against the
	// mappings told of so far: the bytes are not kept for a second pass.
	// The unwinder is made at the first sample with a stack, since a
	// stream's attrs come in it. JIT code is unwound by frame pointers
	// only, since its handlers are bound after the pass.
	var u *unwind.Unwinder
	var sw *stackWalker
	var held heldSamples
	unwindAdd := func(s *perfdata.Sample) { sr.add(s, sw.callchain(s), opts.LeafOnly) }
	r := f.Records()
	r.SkipCallchains = opts.LeafOnly
	for r.Next() {
		switch rec := r.Record().(type) {
		case *perfdata.Sample:
			if len(rec.StackUser) == 0 || opts.LeafOnly {
				sr.add(rec, rec.Callchain, opts.LeafOnly)
				break
			}
			if u == nil {
				u = unwind.New(unwind.Options{Symbolizer: opts.Symbolizer, Procs: tl.Tracker, Cache: true})
				sw = newStackWalker(u)
			}
			held.hold(rec, unwindAdd)
		case *perfdata.FinishedRound:
			held.round(unwindAdd)
		default:
			if takes(rec) {
				tl.take(rec)
			}
		}
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	held.all(unwindAdd)
	// The build-ids come at the end of a stream.
	tl.Tracker.SetBuildIDs(buildIDs(f))
	tl.Tracker.Settle()
	if opts.Bind != nil {
		var err error
		if opts.Anon, err = opts.Bind(tl); err != nil {
			return nil, err
		}
	}
	sw.flush()
	if kernelSampled(f) {
		go opts.Symbolizer.Kernel()
	}

	res, b, events := newResolver(f, tl, opts)
	meta := b.Meta()
	straddle := make([]bool, len(sr.places))
	some := false
	var s resolve.Sample
	for i := range sr.places {
		pl := &sr.places[i]
		pid, tid := uint32(pl.key.pidTID>>32), uint32(pl.key.pidTID)
		if sp := res.Span(pid, tid, pl.tmin); opts.Anon != nil || opts.Times || pl.tmax >= sp.To {
			straddle[i], some = true, true
			continue
		}
		widen(meta, pl.tmin)
		widen(meta, pl.tmax)
		sr.sample(&s, pl.key, events, pl.tmin, pl.count, pl.period)
		res.Add(&s)
	}
	if some {
		for _, x := range sr.samples {
			if straddle[x.place] {
				sr.sample(&s, sr.places[x.place].key, events, x.time, 1, x.period)
				widen(meta, x.time)
				res.Add(&s)
			}
		}
	}
	return finishProfile(f, b, tl, u, opts, 0), nil
}

// heldSamples keeps a stream's samples with user stacks until the
// mappings they ran in have come, as perf report orders a stream: at a
// FINISHED_ROUND record, the samples up to the latest time seen before
// the previous one are unwound, since every record of that time has
// been read by then. Another CPU's ring is read a round later: under
// load a process's first samples came before the mapping of ld.so its
// exec made, and unwound through nothing. The stacks are copies (the
// reader reuses its buffers), at most maxHeldStacks bytes of them: past
// that (a stream without rounds) the oldest are unwound at once.
type heldSamples struct {
	samples []perfdata.Sample
	bytes   int
	seen    uint64 // the latest sample time read
	flushTo uint64 // the latest read before the previous round's end
}

const maxHeldStacks = 64 << 20

// hold keeps a copy of s, unwinding the oldest held through add when
// the copies pass their bound.
func (h *heldSamples) hold(s *perfdata.Sample, add func(*perfdata.Sample)) {
	c := *s
	c.Callchain = slices.Clone(s.Callchain)
	c.RegsUser = slices.Clone(s.RegsUser)
	c.StackUser = slices.Clone(s.StackUser[:min(s.StackDyn, uint64(len(s.StackUser)))])
	c.StackDyn = uint64(len(c.StackUser))
	c.Raw, c.Branches, c.RegsIntr, c.Aux, c.Read.Values = nil, nil, nil, nil, nil
	h.samples = append(h.samples, c)
	h.bytes += len(c.StackUser)
	h.seen = max(h.seen, s.Timestamp())
	if h.bytes > maxHeldStacks {
		n := 0
		for h.bytes > maxHeldStacks/2 {
			h.bytes -= len(h.samples[n].StackUser)
			add(&h.samples[n])
			n++
		}
		h.samples = slices.Delete(h.samples, 0, n)
	}
}

// round unwinds through add the samples no later than the time read
// before the previous round ended, and keeps the rest.
func (h *heldSamples) round(add func(*perfdata.Sample)) {
	kept := h.samples[:0]
	for i := range h.samples {
		if s := &h.samples[i]; s.Timestamp() <= h.flushTo {
			h.bytes -= len(s.StackUser)
			add(s)
		} else {
			kept = append(kept, *s)
		}
	}
	clear(h.samples[len(kept):])
	h.samples = kept
	h.flushTo = h.seen
}

// all unwinds every sample held, at the stream's end.
func (h *heldSamples) all(add func(*perfdata.Sample)) {
	for i := range h.samples {
		add(&h.samples[i])
	}
	h.samples, h.bytes = nil, 0
}
