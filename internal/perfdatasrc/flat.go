package perfdatasrc

import (
	"fmt"
	"sync/atomic"

	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/resolve"
	"github.com/jitprof/jitprof/perfdata"
)

// The flat fast path: a flat report needs of each sample only where it
// was (process, thread, CPU, mode, address), its event, period and time,
// and most samples repeat a few such places. So loadFlat reads the file
// once, in parallel parts found with perfdata's Resync rather than by a
// timeline pass, and sums the samples of each place as it goes, keeping
// the span of their times and the offsets of the other records. Then it
// builds the timeline from those few records and resolves each place
// once: a place whose samples all fall in one span of time in which its
// thread and process do not change resolves as its first sample would;
// the samples of one that straddles such a change are read again and
// resolved one by one.

// flatKey is where a sample was: the fields of a flat report's key
// before resolution. It has no padding, so maps hash it as words.
type flatKey struct {
	pidTID  uint64 // pid<<32 | tid
	ip      uint64
	cpuMode uint64 // uint32(cpu or -1)<<16 | cpumode
	attr    *perfdata.Attr
}

func flatKeyOf(s *perfdata.Sample) flatKey {
	cpu := int32(-1)
	if s.Has(perfdata.SampleCPU) {
		cpu = int32(s.CPU)
	}
	return flatKey{
		pidTID:  uint64(s.PID)<<32 | uint64(s.TID),
		ip:      s.IP,
		cpuMode: uint64(uint32(cpu))<<16 | uint64(s.CPUMode()),
		attr:    s.Attr,
	}
}

// flatEntry sums the samples of one place.
type flatEntry struct {
	key           flatKey
	count, period uint64
	tmin, tmax    uint64
	first, last   int64 // offsets of its first and last samples
}

// flatPart is what the first pass found in one part of the file.
type flatPart struct {
	span
	entries chunked[flatEntry] // in the order their first samples came
	others  []perfdata.Chunk
	// samples are the part's samples in file order, by entry and offset
	// from start, when the part is under 4 GiB (indexed): the places
	// whose samples straddle a change are read again sample by sample,
	// and this finds their samples without reading the others again.
	samples chunked[flatSample]
	indexed bool
}

// flatSample is where a sample of a part is and whose place it is.
type flatSample struct {
	entry int32
	off   uint32 // from the part's start
}

// flatOK reports whether loadFlat can read f with opts: flat, without
// each sample's time (it sums samples by place), with the
// timeline not read already, and a whole file (in a killed one a part
// could stop at a torn record and warn of it, and the warning would stay
// if the read were redone). JIT names are looked up sample by sample: a
// place in anonymous memory is read again as if it straddled a change.
func flatOK(f *perfdata.File, opts Options) bool {
	return opts.LeafOnly && !opts.Times && opts.Timeline == nil && !f.Pipe && !f.Truncated
}

// loadFlat is load for flatOK files. It returns false, having read no
// more than it must, when the parts it guessed do not join up or a part
// meets an error: load then reads the file its usual way, which reports
// the error as one pass would. An error is opts.Bind's, which is not
// asked twice.
func loadFlat(f *perfdata.File, opts Options, nchunks, workers int) (*profile.Profile, bool, error) {
	parts, ok := scanParts(f, nchunks, workers, scanFlat, func(done int64) {
		if opts.Progress != nil {
			opts.Progress(done, f.DataSize)
		}
	})
	if !ok {
		return nil, false, nil
	}
	start, end := f.DataOffset, f.DataOffset+f.DataSize

	tl := newTimeline(f)
	// One Reader jumping from record to record: a Reader is 4 KiB, and a
	// system-wide recording has hundreds of these records, each of which
	// had a fresh one (a third of a small report's page faults).
	r := f.RecordsIn(perfdata.Chunk{Start: start, End: end})
	for _, p := range parts {
		for _, c := range p.others {
			r.JumpTo(c.Start)
			if !r.Next() {
				return nil, false, nil // read once already: it cannot fail now
			}
			tl.take(r.Record())
		}
	}
	tl.Tracker.Settle()
	if opts.Bind != nil {
		var err error
		if opts.Anon, err = opts.Bind(tl); err != nil {
			return nil, false, err
		}
	}

	results := inParallel(len(parts), workers, func(i int) part {
		b, err := resolveFlat(f, parts[i], tl, opts)
		return part{b, err}
	})
	b, err := merge(f, opts, results, func() {})
	if err != nil {
		if opts.Bind != nil {
			return nil, false, fmt.Errorf("replay: %w", err) // not to bind twice
		}
		return nil, false, nil
	}
	return finishProfile(f, b, tl, nil, opts, f.DataSize), true, nil
}

// scanFlat is the first pass over part i, nominally [from, to): a part
// but the first starts at the first record boundary Resync finds from
// from, and every part reads on to the first boundary at or after to.
func scanFlat(f *perfdata.File, i int, from, to int64, done *atomic.Int64) *flatPart {
	sp, ok := partStart(f, i, from, to)
	p := &flatPart{span: sp}
	if !ok {
		return p
	}
	r := f.RecordsUntil(p.start, to)
	r.FixedSampleFields = true
	r.Sequential = true
	// Places grow more slowly than samples; a hint for the map from the
	// part's size saves most of its growing, which rehashes every key.
	index := make(map[flatKey]int32, min((to-from)>>11, 1<<16))
	var last flatKey
	var e *flatEntry
	var cur int32
	// The part reads on past to by at most a record (64 KiB).
	p.indexed = to+(1<<16)-p.start < 1<<32
	rel := releaser{f, p.start, done}
	for r.Next() {
		s, ok := r.Record().(*perfdata.Sample)
		if !ok {
			if takes(r.Record()) {
				p.others = append(p.others, perfdata.Chunk{Start: r.Offset(), End: r.NextOffset()})
			}
			continue
		}
		// Consecutive samples of a CPU are often of one place:
		// comparing is cheaper than hashing.
		k := flatKeyOf(s)
		if e == nil || k != last {
			id, ok := index[k]
			if !ok {
				id = int32(p.entries.len())
				index[k] = id
				e = p.entries.add(flatEntry{key: k, tmin: ^uint64(0), first: s.Offset})
			} else {
				e = p.entries.at(int(id))
			}
			last, cur = k, id
		}
		if p.indexed {
			p.samples.add(flatSample{cur, uint32(s.Offset - p.start)})
		}
		tm := s.Timestamp()
		e.count++
		e.period += s.Period
		e.tmin = min(e.tmin, tm)
		e.tmax = max(e.tmax, tm)
		e.last = s.Offset
		rel.readTo(r.NextOffset())
	}
	p.end = r.NextOffset()
	p.err = r.Err()
	rel.finish(p.end)
	return p
}

// inAnon reports whether a user address lies in anonymous memory at tm,
// where the resolver asks the JIT data, which can change at any time
// without a mapping changing: such a place is resolved sample by sample.
// Only the time of the place's first sample is asked: a place whose
// mapping changes straddles anyway.
func inAnon(tl *Timeline, pid uint32, ip uint64, mode resolve.Mode, tm uint64) bool {
	if mode != resolve.ModeUser {
		return false
	}
	m := tl.Tracker.Lookup(pid, ip, tm, false)
	return m != nil && m.Anon
}

// resolveFlat resolves the places of part p into a profile: once each,
// or sample by sample for those whose samples straddle a change of
// their thread or process, which it reads again.
func resolveFlat(f *perfdata.File, p *flatPart, tl *Timeline, opts Options) (*profile.Builder, error) {
	res, b, events := newResolver(f, tl, opts)
	meta := b.Meta()
	var straddle []bool        // by entry
	from, to := p.end, p.start // the straddling samples' offsets
	var rs resolve.Sample
	for i := range p.entries.len() {
		e := p.entries.at(i)
		pid, tid := uint32(e.key.pidTID>>32), uint32(e.key.pidTID)
		mode := resolve.Mode(e.key.cpuMode & perfdata.MiscCPUModeMask)
		if sp := res.Span(pid, tid, e.tmin); e.tmax >= sp.To &&
			!tl.Tracker.Steady(pid, tid, e.key.ip, mode == resolve.ModeUser, e.tmin, e.tmax) ||
			opts.Anon != nil && inAnon(tl, pid, e.key.ip, mode, e.tmin) {
			if straddle == nil {
				straddle = make([]bool, p.entries.len())
			}
			straddle[i] = true
			from, to = min(from, e.first), max(to, e.last)
			continue
		}
		widen(meta, e.tmin)
		widen(meta, e.tmax)
		rs = resolve.Sample{
			PID: pid, TID: tid, Time: e.tmin, CPU: int32(uint32(e.key.cpuMode >> 16)),
			Mode: mode, IP: e.key.ip,
			Event: events.of(e.key.attr), Count: e.count, Period: e.period,
		}
		res.Add(&rs)
	}
	if straddle == nil {
		return b, nil
	}
	add := func(r *perfdata.Reader) {
		toSample(r.Record().(*perfdata.Sample), events, &rs)
		widen(meta, rs.Time)
		res.Add(&rs)
	}
	r := f.RecordsUntil(from, to+1)
	r.Sequential = true
	r.FixedSampleFields = true
	rel := releaser{f: f, at: from}
	if p.indexed {
		// Only the straddling places' samples, in file order.
		p.samples.all(func(_ int, fs *flatSample) bool {
			if !straddle[fs.entry] {
				return true
			}
			r.JumpTo(p.start + int64(fs.off))
			if !r.Next() {
				return false
			}
			add(r)
			rel.readTo(r.NextOffset())
			return true
		})
	} else {
		keys := map[flatKey]bool{}
		for i, st := range straddle {
			if st {
				keys[p.entries.at(i).key] = true
			}
		}
		for r.Next() {
			if s, ok := r.Record().(*perfdata.Sample); ok && keys[flatKeyOf(s)] {
				add(r)
			}
			rel.readTo(r.NextOffset())
		}
	}
	rel.finish(r.NextOffset())
	return b, r.Err()
}
