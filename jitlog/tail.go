package jitlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jitprof/jitprof/internal/trust"
)

// A Tail follows a database while its JIT writes it, returning records as
// they are published. A record that is reserved but not yet published
// holds back the ones after it while the writing process lives; once that
// process is gone it is torn, reported as ErrTorn, and skipped.
type Tail struct {
	// Alive reports whether the writer of h still runs; ProcessAlive by
	// default. Tests replace it.
	Alive func(h *Header) bool
	// Warn receives ErrTorn errors from Follow; they are dropped if nil.
	Warn func(error)

	f      *os.File
	path   string
	rule   trust.Rule
	hdr    *Header
	off    uint64
	frame  Reader // buffered reads of frames for the publication scan
	clocks clocks // loggers' TSC calibration, across polls
}

// OpenTail opens path, after the checks in opts (nil for the defaults),
// for following. The file may not have a header yet.
func OpenTail(path string, opts *ReadOptions) (*Tail, error) {
	f, err := openChecked(path, opts)
	if err != nil {
		return nil, err
	}
	return &Tail{Alive: ProcessAlive, f: f.File, path: path, rule: opts.rule(), clocks: clocks{}}, nil
}

// Header is the file header, nil until Poll has seen it.
func (t *Tail) Header() *Header { return t.hdr }

// Close closes the file.
func (t *Tail) Close() error { return t.f.Close() }

// Poll returns the records published since the last call, the header
// first on the call that first sees it. An ErrTorn error comes with the
// records read; the next Poll goes on after the torn record.
func (t *Tail) Poll() ([]Record, error) {
	var recs []Record
	fi, err := t.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("jitlog: tail %s: %w", t.path, err)
	}
	size := uint64(fi.Size())
	if err := t.rule.CheckSize(t.path, fi.Size()); err != nil {
		return nil, fmt.Errorf("jitlog: %w", err)
	}
	var hb [HeaderSize]byte
	if size < HeaderSize {
		return nil, nil
	}
	if _, err := t.f.ReadAt(hb[:], 0); err != nil {
		return nil, fmt.Errorf("jitlog: tail %s: %w", t.path, err)
	}
	if t.hdr == nil {
		if le.Uint64(hb[offMagic:]) == 0 {
			return nil, nil // being created
		}
		h, err := decodeHeader(hb[:])
		if err != nil {
			return nil, fmt.Errorf("jitlog: tail %s: %w", t.path, err)
		}
		t.hdr, t.off = h, HeaderSize
		recs = append(recs, h)
	}
	end := max(size, t.off)

	// Pass 1 finds how far records are published (or torn by a dead
	// writer). Pass 2 re-reads that span: a single read could see a
	// commit word before the body it guards, a second read cannot.
	t.frame = Reader{r: t.f, end: end, buf: t.frame.buf[:0]}
	pos := t.off
	checked, alive := false, false
	for pos+frameSize <= end {
		f, err := t.frame.bytesAt(pos, frameSize)
		if err != nil {
			return recs, fmt.Errorf("jitlog: tail %s: offset %d: %w", t.path, pos, err)
		}
		size, _, st, err := parseFrame(f, pos, end)
		if err != nil {
			return recs, fmt.Errorf("jitlog: tail %s: offset %d: %w", t.path, pos, err)
		}
		if st == unclaimed {
			break
		}
		if st == pending {
			if !checked {
				checked, alive = true, t.Alive(t.hdr)
			}
			if alive {
				break
			}
		}
		pos += size
	}
	rd := &Reader{r: t.f, hdr: t.hdr, off: t.off, end: pos, started: true, clocks: t.clocks}
	for rd.Next() {
		recs = append(recs, rd.Record())
	}
	t.off = rd.off
	if err := rd.Err(); err != nil {
		return recs, fmt.Errorf("jitlog: tail %s: %w", t.path, err)
	}
	return recs, nil
}

// Follow polls every interval and calls fn for each record until ctx is
// done (returning nil), fn fails, or reading fails other than by ErrTorn.
func (t *Tail) Follow(ctx context.Context, every time.Duration, fn func(Record) error) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		recs, err := t.Poll()
		for _, r := range recs {
			if ferr := fn(r); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			if !errors.Is(err, ErrTorn) {
				return err
			}
			if t.Warn != nil {
				t.Warn(err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
