package session

import (
	"fmt"
	"slices"

	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/symbolize"
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
// thread or process, or JIT names (which change at any time) are asked
// for: exactly what reading a file in one part gives.

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

func (sr *streamReader) add(s *perfdata.Sample, leafOnly bool) {
	k := streamKey{flatKeyOf(s), -1}
	if !leafOnly {
		k.chain = sr.chain(s.Callchain)
	}
	id, ok := sr.index[k]
	if !ok {
		id = int32(len(sr.places))
		sr.index[k] = id
		sr.places = append(sr.places, streamPlace{key: k, tmin: ^uint64(0)})
	}
	pl := &sr.places[id]
	tm := recTime(&s.Common)
	pl.count++
	pl.period += s.Period
	pl.tmin, pl.tmax = min(pl.tmin, tm), max(pl.tmax, tm)
	sr.samples = append(sr.samples, streamSample{id, tm, s.Period})
}

// sample rebuilds the sample of place k at time tm, with period.
func (sr *streamReader) sample(s *perfdata.Sample, k streamKey, tm, period uint64) {
	*s = perfdata.Sample{Period: period}
	s.Attr = k.attr
	s.PID, s.TID = uint32(k.pidTID>>32), uint32(k.pidTID)
	s.IP = k.ip
	s.Misc = uint16(k.cpuMode & perfdata.MiscCPUModeMask)
	s.CPU = uint32(k.cpuMode >> 16)
	s.Time = tm
	if k.chain >= 0 {
		sp := sr.spans[k.chain]
		s.Callchain = sr.arena[sp[0] : sp[0]+sp[1]]
	}
}

// loadStream is Load for a pipe-mode stream, in one pass.
func loadStream(f *perfdata.File, opts Options) (*profile.Profile, error) {
	tl := newTimeline(f)
	sr := &streamReader{index: map[streamKey]int32{}, chains: map[uint64][]int32{}}
	r := f.Records()
	r.SkipCallchains = opts.LeafOnly
	for r.Next() {
		switch rec := r.Record().(type) {
		case *perfdata.Sample:
			sr.add(rec, opts.LeafOnly)
		default:
			if takes(rec) {
				tl.take(rec)
			}
		}
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	// The build-ids come at the end of a stream.
	if ids, err := f.Features.BuildIDs(); err == nil {
		for _, b := range ids {
			tl.buildIDs[b.Filename] = fmt.Sprintf("%x", b.ID)
		}
		for _, m := range tl.Mappings {
			if m.BuildID == "" {
				m.BuildID = tl.buildIDs[m.Path]
			}
		}
	}
	tl.finish()
	if opts.Bind != nil {
		var err error
		if opts.Anon, err = opts.Bind(tl); err != nil {
			return nil, err
		}
	}
	if opts.Symbolizer == nil {
		opts.Symbolizer = symbolize.New(symbolize.Options{})
	}
	if kernelSampled(f) {
		go opts.Symbolizer.Kernel()
	}

	l := newLoader(f, tl, opts)
	meta := l.b.Meta()
	straddle := make([]bool, len(sr.places))
	some := false
	var s perfdata.Sample
	for i := range sr.places {
		pl := &sr.places[i]
		pid, tid := uint32(pl.key.pidTID>>32), uint32(pl.key.pidTID)
		if ts := l.span(pid, tid, pl.tmin); opts.Anon != nil || pl.tmax >= ts.to {
			straddle[i], some = true, true
			continue
		}
		for _, tm := range []uint64{pl.tmin, pl.tmax} {
			if meta.StartNS == 0 || tm < meta.StartNS {
				meta.StartNS = tm
			}
			meta.EndNS = max(meta.EndNS, tm)
		}
		th := l.thread(pid, tid, pl.tmin)
		sr.sample(&s, pl.key, pl.tmin, pl.period)
		node := l.stack(&s, pl.tmin, th.epoch)
		cpu := int32(uint32(pl.key.cpuMode >> 16))
		l.b.Add(profile.Key{Stack: node, Thread: th.id, CPU: cpu, Event: l.events[pl.key.attr]}, pl.count, pl.period)
	}
	if some {
		for _, x := range sr.samples {
			if straddle[x.place] {
				sr.sample(&s, sr.places[x.place].key, x.time, x.period)
				l.sample(&s)
			}
		}
	}
	return finishProfile(f, l.b, tl, opts, 0), nil
}
