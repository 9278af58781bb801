package delivery

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeExporter answers attempts from a script, then Sent; block, when
// set, holds every attempt until it is closed.
type fakeExporter struct {
	mu      sync.Mutex
	script  []Result
	sent    []int // first byte of each batch sent
	tries   []time.Time
	block   chan struct{}
	closed  bool
	started chan struct{} // gets a value at each attempt, when set
}

func (f *fakeExporter) Export(ctx context.Context, batch []byte) Result {
	if f.started != nil {
		f.started <- struct{}{}
	}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return Result{Outcome: Retry, Message: ctx.Err().Error()}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tries = append(f.tries, time.Now())
	r := Result{Outcome: Sent}
	if len(f.script) > 0 {
		r, f.script = f.script[0], f.script[1:]
	}
	if r.Outcome == Sent {
		f.sent = append(f.sent, int(batch[0]))
	}
	return r
}

func (f *fakeExporter) Close() error { f.closed = true; return nil }

var fastBackoff = Backoff{Initial: 20 * time.Millisecond, Max: 80 * time.Millisecond, MaxAsked: time.Second, Refused: 100 * time.Millisecond}

func flush(t *testing.T, s *Sender) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSenderOutcomes: batches to retry and with credentials refused are
// kept and sent later, in order; a rejected one is dropped; a partial
// success is sent and said. Status counts it all.
func TestSenderOutcomes(t *testing.T) {
	exp := &fakeExporter{script: []Result{
		{Outcome: Retry, Message: "HTTP 503"},
		{Outcome: Refused, Message: "HTTP 401 Unauthorized"},
		{Outcome: Sent},
		{Outcome: Rejected, Message: "HTTP 400"},
		{Outcome: Sent, RejectedProfiles: 2, Message: "two profiles without samples"},
	}}
	sp := openSpool(t, filepath.Join(t.TempDir(), "spool"), 1<<20)
	s := NewSender(sp, exp, "http://col", fastBackoff)
	for i := range 4 {
		if err := s.Submit(batch(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, s)
	st := s.Status()
	s.Close()
	if !slices.Equal(exp.sent, []int{0, 2, 3}) {
		t.Errorf("sent %v, want 0 (after a 503 and a 401), 2 (1 rejected), 3", exp.sent)
	}
	if st.Sent != 3 || st.SentBytes != 30 || st.Rejected != 1 || st.RejectedProfiles != 2 || st.Queued != 0 || st.Dropped != 0 || st.LastSuccess.IsZero() {
		t.Errorf("status %+v", st)
	}
	if !strings.Contains(st.LastError, "rejected 2 profiles") || st.Endpoint != "http://col" {
		t.Errorf("last error %q, endpoint %q", st.LastError, st.Endpoint)
	}
	// The 401 waited at least Refused, the 503 at least half of Initial.
	if d := exp.tries[1].Sub(exp.tries[0]); d < fastBackoff.Initial/2 {
		t.Errorf("tried again after a 503 in %v", d)
	}
	if d := exp.tries[2].Sub(exp.tries[1]); d < fastBackoff.Refused {
		t.Errorf("tried again after a 401 in %v, want at least %v", d, fastBackoff.Refused)
	}
	if !exp.closed {
		t.Error("the exporter was not closed")
	}
}

// TestSenderRetryAfter: the server's delay is honoured.
func TestSenderRetryAfter(t *testing.T) {
	exp := &fakeExporter{script: []Result{{Outcome: Retry, After: 300 * time.Millisecond, Message: "HTTP 429"}}}
	s := NewSender(openSpool(t, filepath.Join(t.TempDir(), "spool"), 1<<20), exp, "", fastBackoff)
	defer s.Close()
	s.Submit(batch(1, 10))
	flush(t, s)
	if d := exp.tries[1].Sub(exp.tries[0]); d < 300*time.Millisecond {
		t.Errorf("tried again %v after a Retry-After of 300ms", d)
	}
}

// TestSubmitNeverWaits: while an attempt hangs, Submit returns at once,
// and once the spool is full the oldest batches (not the one being
// sent) are dropped and counted. Close cuts the attempt off and leaves
// the batches for the next run.
func TestSubmitNeverWaits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	exp := &fakeExporter{block: make(chan struct{}), started: make(chan struct{}, 100)}
	size := int64(10 + spoolHeader)
	s := NewSender(openSpool(t, dir, 4*size), exp, "", fastBackoff)
	s.Submit(batch(0, 10))
	<-exp.started
	start := time.Now()
	for i := 1; i <= 6; i++ {
		if err := s.Submit(batch(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("6 batches took %v to submit while the exporter hung", d)
	}
	st := s.Status()
	if st.Queued != 4 || st.Dropped != 3 {
		t.Errorf("status %+v: want 4 queued (0 being sent, 4, 5, 6) and 3 dropped", st)
	}
	s.Close()
	sp := openSpool(t, dir, 4*size)
	defer sp.Close()
	if got := drain(t, sp); !slices.Equal(got, []int{0, 4, 5, 6}) {
		t.Errorf("after Close the spool holds %v, want 0, 4, 5, 6", got)
	}
}

// TestSendOne: push's way: retry what may pass, stop at the first
// refusal, give up when the context ends.
func TestSendOne(t *testing.T) {
	exp := &fakeExporter{script: []Result{{Outcome: Retry, Message: "HTTP 503"}, {Outcome: Retry, Message: "HTTP 502"}}}
	if _, err := SendOne(context.Background(), exp, batch(1, 1), fastBackoff); err != nil || len(exp.tries) != 3 {
		t.Errorf("%v after %d tries", err, len(exp.tries))
	}
	exp = &fakeExporter{script: []Result{{Outcome: Refused, Message: "HTTP 401"}}}
	if _, err := SendOne(context.Background(), exp, batch(1, 1), fastBackoff); err == nil || !strings.Contains(err.Error(), "refused the credentials: HTTP 401") {
		t.Errorf("a refusal: %v", err)
	}
	exp = &fakeExporter{script: slices.Repeat([]Result{{Outcome: Retry, Message: "connection refused"}}, 1000)}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := SendOne(ctx, exp, batch(1, 1), fastBackoff); err == nil || !strings.Contains(err.Error(), "connection refused (gave up") {
		t.Errorf("giving up: %v", err)
	}
}

// TestBackoff: doubling to the bound, with up to half taken off at
// random; the server's delay as it is, up to its bound.
func TestBackoff(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: 30 * time.Second, MaxAsked: time.Minute, Refused: 45 * time.Second}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 6: 30 * time.Second, 60: 30 * time.Second} {
		for range 100 {
			if d := b.Delay(n, Result{Outcome: Retry}); d > want || d < want/2 {
				t.Fatalf("failure %d: %v, want %v to %v", n, d, want/2, want)
			}
		}
	}
	if d := b.Delay(1, Result{Outcome: Refused}); d != 45*time.Second {
		t.Errorf("refused: %v", d)
	}
	if d := b.Delay(3, Result{Outcome: Retry, After: 7 * time.Second}); d != 7*time.Second {
		t.Errorf("asked for 7s: %v", d)
	}
	if d := b.Delay(3, Result{Outcome: Retry, After: time.Hour}); d != time.Minute {
		t.Errorf("asked for an hour: %v", d)
	}
}
