package delivery

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Exporter makes one attempt at sending a batch (a gzip-compressed
// ExportProfilesServiceRequest). Child is jitprof's.
type Exporter interface {
	Export(ctx context.Context, batch []byte) Result
	Close() error
}

// Backoff says how long to wait before trying a batch again: after the
// n-th failure in a row, Initial doubled n-1 times, at most Max, of
// which a random part (up to half) is taken off so that many senders do
// not come back at once; or what the server asked for (Retry-After,
// RetryInfo), at most MaxAsked. Credentials refused wait at least
// Refused: they are fixed by someone, not by time.
type Backoff struct {
	Initial, Max, MaxAsked, Refused time.Duration
}

// DefaultBackoff is the OpenTelemetry SDKs' (5 s, at most 30 s), with a
// minute between attempts with refused credentials and at most five
// minutes of waiting the server may ask for.
var DefaultBackoff = Backoff{Initial: 5 * time.Second, Max: 30 * time.Second, MaxAsked: 5 * time.Minute, Refused: time.Minute}

// Delay is how long to wait after the n-th failure in a row, r.
func (b Backoff) Delay(n int, r Result) time.Duration {
	if r.After > 0 {
		return min(r.After, b.MaxAsked)
	}
	d := b.Initial
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	d -= time.Duration(rand.Int64N(int64(d)/2 + 1))
	if r.Outcome == Refused {
		d = max(d, b.Refused)
	}
	return d
}

// Status is what a Sender has done, for jitprof daemon status.
type Status struct {
	Endpoint    string
	LastSuccess time.Time // zero before the first
	// Sent counts the batches the Collector took and their bytes (as
	// spooled: compressed).
	Sent, SentBytes uint64
	SpoolStats
	// Rejected counts the batches the Collector refused for good;
	// RejectedProfiles the profiles partial successes said it rejected.
	Rejected         uint64
	RejectedProfiles uint64
	// LastError is the last failure (never a header's value), when;
	// Retry when the batch is tried again.
	LastError     string
	LastErrorTime time.Time
	Retry         time.Time
}

// Sender sends the batches of a spool, oldest first, one at a time, in a
// goroutine of its own: Submit only writes to the spool.
type Sender struct {
	spool    *Spool
	exp      Exporter
	backoff  Backoff
	wake     chan struct{}
	stop     context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	st       Status
	failures int
	idle     *sync.Cond // signalled when the spool is found empty
}

// NewSender starts sending sp's batches through exp; endpoint is what
// Status says they go to. The Sender owns exp and sp.
func NewSender(sp *Spool, exp Exporter, endpoint string, b Backoff) *Sender {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sender{spool: sp, exp: exp, backoff: b, wake: make(chan struct{}, 1), stop: cancel, done: make(chan struct{})}
	s.st.Endpoint = endpoint
	s.idle = sync.NewCond(&s.mu)
	go s.run(ctx)
	return s
}

// Submit queues a batch. It never waits for the network: it writes the
// batch to the spool and wakes the sender.
func (s *Sender) Submit(batch []byte) error {
	err := s.spool.Put(batch)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return err
}

// Status returns what the Sender has done.
func (s *Sender) Status() Status {
	s.mu.Lock()
	st := s.st
	s.mu.Unlock()
	st.SpoolStats = s.spool.Stats()
	return st
}

// Flush waits until every batch queued is sent or dropped, or ctx ends.
func (s *Sender) Flush(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.idle.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.spool.Stats().Queued > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("otlp: %d batches not sent: %w", s.spool.Stats().Queued, err)
		}
		s.idle.Wait()
	}
	return nil
}

// Close stops sending, at once: an attempt under way is cut off, and
// its batch stays in the spool with the others, for the next run.
func (s *Sender) Close() error {
	s.stop()
	<-s.done
	return errors.Join(s.exp.Close(), s.spool.Close())
}

func (s *Sender) run(ctx context.Context) {
	defer close(s.done)
	for ctx.Err() == nil {
		seq, batch, err := s.spool.Oldest()
		if errors.Is(err, ErrEmpty) {
			s.mu.Lock()
			s.idle.Broadcast()
			s.mu.Unlock()
			select {
			case <-s.wake:
			case <-ctx.Done():
			}
			continue
		}
		if err != nil {
			s.fail(err.Error())
			continue
		}
		r := s.exp.Export(ctx, batch)
		if ctx.Err() != nil {
			s.spool.Release(seq)
			return
		}
		s.mu.Lock()
		switch r.Outcome {
		case Sent:
			s.failures = 0
			s.st.Sent++
			s.st.SentBytes += uint64(len(batch))
			s.st.LastSuccess = time.Now()
			if r.RejectedProfiles > 0 || r.Message != "" {
				s.st.RejectedProfiles += uint64(r.RejectedProfiles)
				s.failLocked(fmt.Sprintf("partial success: %v", r.Err()))
			}
		case Rejected:
			s.st.Rejected++
			s.failLocked(r.Err().Error())
		default:
			s.failures++
			delay := s.backoff.Delay(s.failures, r)
			s.st.Retry = time.Now().Add(delay)
			s.failLocked(r.Err().Error())
			s.mu.Unlock()
			s.spool.Release(seq)
			select {
			case <-time.After(delay):
			case <-ctx.Done():
			}
			continue
		}
		s.st.Retry = time.Time{}
		s.mu.Unlock()
		s.spool.Remove(seq)
	}
}

func (s *Sender) fail(msg string) {
	s.mu.Lock()
	s.failLocked(msg)
	s.mu.Unlock()
}

func (s *Sender) failLocked(msg string) {
	s.st.LastError, s.st.LastErrorTime = msg, time.Now()
}

// SendOne sends one batch through exp as a Sender would, retrying while
// the failures are ones that may pass, until ctx ends; credentials
// refused and a batch rejected are errors at once (jitprof push).
func SendOne(ctx context.Context, exp Exporter, batch []byte, b Backoff) (Result, error) {
	for n := 1; ; n++ {
		r := exp.Export(ctx, batch)
		if r.Outcome != Retry {
			return r, r.Err()
		}
		if ctx.Err() != nil {
			return r, fmt.Errorf("%w (gave up: %w)", r.Err(), context.Cause(ctx))
		}
		select {
		case <-time.After(b.Delay(n, r)):
		case <-ctx.Done():
			return r, fmt.Errorf("%w (gave up: %w)", r.Err(), context.Cause(ctx))
		}
	}
}
