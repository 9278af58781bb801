package jitlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

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
	read   Reader // and of the records: its buffer kept across polls
	clocks clocks // loggers' TSC calibration, across polls
	want   uint64 // Want's
	frames int    // Frames'
}

// Want is Reader.Want for the records the polls return.
func (t *Tail) Want(kinds ...Kind) { t.want = wantOf(kinds) }

// Frames is how many records the last poll went over: those it returned,
// those Want stepped over, padding and records not yet published.
func (t *Tail) Frames() int { return t.frames }

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

// File is the database followed, for a copy of what Poll returned
// (Offset says how far that is).
func (t *Tail) File() *os.File { return t.f }

// Offset is where the record after those returned begins: the database
// up to it is the header and whole records.
func (t *Tail) Offset() int64 {
	if t.hdr == nil {
		return 0
	}
	return int64(t.off)
}

// Poll returns the records published since the last call, the header
// first on the call that first sees it. An ErrTorn error comes with the
// records read; the next Poll goes on after the torn record.
func (t *Tail) Poll() ([]Record, error) {
	recs, _, err := t.PollLimit(0, 0)
	return recs, err
}

// PollLimit is Poll returning at most maxRecords records of at most
// maxBytes bytes in all (0: no bound), so that a follower's work on a
// database that grew by a gigabyte is bounded; more says records were
// left for the next call. A positive maxBytes returns at least one
// record when one is published, however big; a negative one returns
// none, only whether one waits.
func (t *Tail) PollLimit(maxBytes int64, maxRecords int) (_ []Record, more bool, _ error) {
	var recs []Record
	t.frames = 0
	var fst unix.Stat_t
	if err := unix.Fstat(int(t.f.Fd()), &fst); err != nil {
		return nil, false, fmt.Errorf("jitlog: tail %s: %w", t.path, err)
	}
	size := uint64(fst.Size)
	if err := t.rule.CheckSize(t.path, fst.Size); err != nil {
		return nil, false, fmt.Errorf("jitlog: %w", err)
	}
	var hb [HeaderSize]byte
	if size < HeaderSize {
		return nil, false, nil
	}
	if _, err := t.f.ReadAt(hb[:], 0); err != nil {
		return nil, false, fmt.Errorf("jitlog: tail %s: %w", t.path, err)
	}
	if t.hdr == nil {
		if le.Uint64(hb[offMagic:]) == 0 {
			return nil, false, nil // being created
		}
		h, err := decodeHeader(hb[:])
		if err != nil {
			return nil, false, fmt.Errorf("jitlog: tail %s: %w", t.path, err)
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
	n := 0
	for pos+frameSize <= end {
		f, err := t.frame.bytesAt(pos, frameSize)
		if err != nil {
			return recs, false, fmt.Errorf("jitlog: tail %s: offset %d: %w", t.path, pos, err)
		}
		size, _, st, err := parseFrame(f, pos, end)
		if err != nil {
			return recs, false, fmt.Errorf("jitlog: tail %s: offset %d: %w", t.path, pos, err)
		}
		if st == unclaimed {
			break
		}
		if maxBytes < 0 || maxRecords > 0 && n >= maxRecords || maxBytes > 0 && n > 0 && int64(pos+size-t.off) > maxBytes {
			more = true
			break
		}
		n++
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
	t.frames = n
	rd := &t.read
	*rd = Reader{r: t.f, hdr: t.hdr, off: t.off, end: pos, started: true, clocks: t.clocks, buf: rd.buf[:0], want: t.want}
	for rd.Next() {
		recs = append(recs, rd.Record())
	}
	t.off = rd.off
	if err := rd.Err(); err != nil {
		return recs, more, fmt.Errorf("jitlog: tail %s: %w", t.path, err)
	}
	return recs, more, nil
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
