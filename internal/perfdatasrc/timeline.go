package perfdatasrc

import (
	"errors"
	"fmt"
	"slices"

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
