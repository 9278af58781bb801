package perfdatasrc

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/perfdata"
)

// Timeline is what a recording says besides its samples: its processes
// and mappings over time (a process.Tracker), the samples it lost, and
// where its data can be split for reading in parallel.
type Timeline struct {
	// Tracker holds the recording's processes and mappings; settled, so
	// goroutines may ask it at once.
	Tracker *process.Tracker
	lost    uint64 // samples lost, from LOST and LOST_SAMPLES records
	// anonCode says a process mapped anonymous executable memory (JIT
	// code): without it no address is one to ask the JIT handlers of.
	anonCode bool
	// bounds are the offsets of the non-sample records, where the data
	// can be split for reading in parallel.
	bounds []int64
}

func newTimeline(f *perfdata.File) *Timeline {
	tl := &Timeline{Tracker: process.New()}
	tl.Tracker.SetBuildIDs(buildIDs(f))
	return tl
}

// buildIDs are the recording's BUILD_ID feature, by path; in a stream
// they come at the end.
func buildIDs(f *perfdata.File) map[string]string {
	out := map[string]string{}
	if ids, err := f.Features.BuildIDs(); err == nil {
		for _, b := range ids {
			out[b.Filename] = fmt.Sprintf("%x", b.ID)
		}
	}
	return out
}

// takes reports whether take keeps anything of rec.
func takes(rec perfdata.Record) bool {
	switch rec.(type) {
	case *perfdata.Mmap, *perfdata.Comm, *perfdata.Fork, *perfdata.Lost, *perfdata.LostSamples:
		return true
	}
	return false
}

// take takes what the timeline keeps of one non-sample record: the
// processes and mappings, and the samples lost.
func (t *Timeline) take(rec perfdata.Record) {
	switch r := rec.(type) {
	case *perfdata.Lost:
		t.lost += r.Lost
	case *perfdata.LostSamples:
		t.lost += r.Lost
	case *perfdata.Mmap:
		if m := process.FromMmap(r); m.Anon && m.Exec {
			t.anonCode = true
		}
		t.Tracker.Take(rec)
	default:
		t.Tracker.Take(rec)
	}
}

// BuildTimeline reads the process and mapping records of a recording
// into a Timeline, for callers that need the processes before Load
// (to choose JIT handlers per process); pass it to Load in
// Options.Timeline so the file's records are not read twice for it.
func BuildTimeline(f *perfdata.File) (*Timeline, error) {
	return buildTimeline(f, nil)
}

// buildTimeline reads the timeline and counts lost samples, reporting
// progress as the first half of a two-pass read.
func buildTimeline(f *perfdata.File, progress func(done, total int64)) (*Timeline, error) {
	if f.Pipe {
		return nil, errors.New("replay: a stream's timeline comes with its samples, in the one pass Load makes (see Options.Bind)")
	}
	workers := runtime.GOMAXPROCS(0)
	if tl, ok := timelineInParts(f, min(workers, int(f.DataSize/minChunk)+1), workers, progress); ok {
		return tl, nil
	}
	return timelineInOnePass(f, progress)
}

// timelineInOnePass is buildTimeline reading the file in one pass.
func timelineInOnePass(f *perfdata.File, progress func(done, total int64)) (*Timeline, error) {
	tl := newTimeline(f)
	total := f.DataSize * 2
	r := f.Records()
	r.Sequential = true // what the timeline keeps of a record is copied
	// The samples are read later, in parts: keep only those parts in
	// memory.
	rel := releaser{f: f, at: f.DataOffset}
	for n := 0; r.NextNonSample(); n++ {
		off := r.Offset()
		tl.bounds = append(tl.bounds, off)
		rel.readTo(off)
		tl.take(r.Record())
		if progress != nil && n&0xffff == 0 {
			progress(r.Offset()-f.DataOffset, total)
		}
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	tl.Tracker.Settle()
	rel.finish(f.DataOffset + f.DataSize)
	return tl, nil
}

// timelineInParts is buildTimeline reading the file in n parallel parts
// on at most workers goroutines, parts found with perfdata's Resync as
// loadFlat's first pass finds them: each part notes where its
// non-sample records are, and one Reader then takes those the timeline
// keeps, in file order, as the one pass would. Its time is the copying
// of every byte of the file, the samples' stack copies in a DWARF
// recording (a million samples of 8 KiB stacks are 12 GB), which the
// parts share among the cores. The records of lost samples, which a
// loaded machine writes all through a recording, are summed by the
// parts: reading them again would touch a page of the mapped file for
// each. It returns false, for buildTimeline to read the file in one
// pass, for one part, a killed file (a part could stop at a torn record
// and warn of it, and the warning would stay), parts that do not join
// up, or a part that meets an error, which the one pass then reports.
func timelineInParts(f *perfdata.File, n, workers int, progress func(done, total int64)) (*Timeline, bool) {
	if n < 2 || f.Truncated {
		return nil, false
	}
	parts, ok := scanParts(f, n, workers, scanTimeline, func(done int64) {
		if progress != nil {
			progress(done, f.DataSize*2)
		}
	})
	if !ok {
		return nil, false
	}
	tl := newTimeline(f)
	r := f.RecordsIn(perfdata.Chunk{Start: f.DataOffset, End: f.DataOffset + f.DataSize})
	for _, p := range parts {
		tl.bounds = append(tl.bounds, p.bounds...)
		tl.lost += p.lost
		for _, off := range p.takes {
			r.JumpTo(off)
			if !r.Next() {
				return nil, false // read once already: it cannot fail now
			}
			tl.take(r.Record())
		}
	}
	tl.Tracker.Settle()
	return tl, true
}

// timelinePart is what scanTimeline found in one part of a file.
type timelinePart struct {
	span
	bounds []int64 // the offsets of its non-sample records
	// takes are the offsets of the records of processes and mappings,
	// which the Tracker takes in file order; lost sums the others'.
	takes []int64
	lost  uint64
}

// scanTimeline reads part i, nominally [from, to), as scanFlat reads it.
func scanTimeline(f *perfdata.File, i int, from, to int64, done *atomic.Int64) *timelinePart {
	sp, ok := partStart(f, i, from, to)
	p := &timelinePart{span: sp}
	if !ok {
		return p
	}
	r := f.RecordsUntil(p.start, to)
	r.Sequential = true
	rel := releaser{f, p.start, done}
	for r.NextNonSample() {
		off := r.Offset()
		p.bounds = append(p.bounds, off)
		switch rec := r.Record().(type) {
		case *perfdata.Lost:
			p.lost += rec.Lost
		case *perfdata.LostSamples:
			p.lost += rec.Lost
		default:
			if takes(rec) {
				p.takes = append(p.takes, off)
			}
		}
		rel.readTo(off)
	}
	p.end = r.NextOffset()
	p.err = r.Err()
	rel.finish(p.end)
	return p
}

// chunks splits the data section of f, whose timeline t is, into at most
// n parts of about equal size at record boundaries.
func (t *Timeline) chunks(f *perfdata.File, n int) []perfdata.Chunk {
	start, end := f.DataOffset, f.DataOffset+f.DataSize
	var out []perfdata.Chunk
	for i := 1; i < n; i++ {
		target := f.DataOffset + f.DataSize*int64(i)/int64(n)
		j, _ := slices.BinarySearch(t.bounds, target)
		if j == len(t.bounds) {
			break
		}
		if b := t.bounds[j]; b > start {
			out = append(out, perfdata.Chunk{Start: start, End: b})
			start = b
		}
	}
	return append(out, perfdata.Chunk{Start: start, End: end})
}
