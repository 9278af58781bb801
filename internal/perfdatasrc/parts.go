package perfdatasrc

import (
	"sync/atomic"
	"time"

	"github.com/jitprof/jitprof/perfdata"
)

// A first pass may read a file's data section in parts on every core
// (the flat report's, loadFlat; the timeline's, timelineInParts): each
// part guesses its first record boundary (perfdata's Resync), reads on
// to the first boundary at or after its nominal end, and the parts are
// used only when they join up, each having started where the one before
// stopped: a part's reader, having started at a true boundary, confirms
// the next part's guess.

// span is where the scan of one part started and stopped, and the error
// that stopped it.
type span struct {
	start, end int64 // the records read: [start, end)
	err        error
}

func (s *span) partSpan() *span { return s }

// scanParts runs scan over n parts of f's data section, part i nominally
// [from, to), on at most workers goroutines, calling progress with the
// bytes read so far every tickEvery while it waits. It returns the parts
// and whether they join up: each read without error from where the one
// before stopped, the last to the section's end.
func scanParts[P interface{ partSpan() *span }](f *perfdata.File, n, workers int, scan func(f *perfdata.File, i int, from, to int64, done *atomic.Int64) P, progress func(done int64)) ([]P, bool) {
	start, end := f.DataOffset, f.DataOffset+f.DataSize
	var done atomic.Int64
	scans := inParallel(n, workers, func(i int) P {
		return scan(f, i, start+f.DataSize*int64(i)/int64(n), start+f.DataSize*int64(i+1)/int64(n), &done)
	})
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	parts := make([]P, n)
	for i, ch := range scans {
		parts[i] = receive(ch, t, func() { progress(done.Load()) })
	}
	at := start
	for _, p := range parts {
		s := p.partSpan()
		if s.err != nil || s.start != at {
			return parts, false
		}
		at = s.end
	}
	return parts, at == end
}

// partStart returns the span where part i, nominally [from, to), starts
// reading: from for the first part, else the first record boundary
// Resync finds; false, and the empty span at to, when there is none
// before to (the part before then reads it all).
func partStart(f *perfdata.File, i int, from, to int64) (span, bool) {
	if i == 0 {
		return span{start: from}, true
	}
	s, ok := f.Resync(from, to)
	if !ok {
		return span{start: to, end: to}, false
	}
	return span{start: s}, true
}
