package delivery_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/delivery"
	"github.com/jitprof/jitprof/internal/otelcoltest"
	"github.com/jitprof/jitprof/internal/otlp"
	"github.com/jitprof/jitprof/internal/profile/profiletest"
)

var exporter struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// exporterPath builds jitprof-otlp once per test binary (TestMain
// removes it).
func exporterPath(t *testing.T) string {
	t.Helper()
	exporter.once.Do(func() {
		exporter.dir, exporter.err = os.MkdirTemp("", "jitprof-otlp-test.")
		if exporter.err != nil {
			return
		}
		exporter.path = filepath.Join(exporter.dir, delivery.ExporterCommand)
		if out, err := exec.Command("go", "build", "-o", exporter.path, "../../cmd/jitprof-otlp").CombinedOutput(); err != nil {
			exporter.err = &buildError{err, string(out)}
		}
	})
	if exporter.err != nil {
		t.Fatal(exporter.err)
	}
	return exporter.path
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build jitprof-otlp: " + e.err.Error() + "\n" + e.out }

// samplesPerBatch is profiletest.Sample's.
const samplesPerBatch = 11

// testBatch is a request of profiletest.Sample's 11 samples, one that no
// other batch number equals (its profile IDs differ), gzip-compressed.
func testBatch(t *testing.T, n int) []byte {
	t.Helper()
	p := profiletest.Sample()
	p.StartNS += uint64(n)
	b, err := otlp.Encode(p, otlp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	return z.Bytes()
}

// waitStatus polls s until ok says its Status is as wanted.
func waitStatus(t *testing.T, s *delivery.Sender, d time.Duration, ok func(delivery.Status) bool) delivery.Status {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		st := s.Status()
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the sender's status is %+v", d, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var testBackoff = delivery.Backoff{Initial: 200 * time.Millisecond, Max: time.Second, MaxAsked: 5 * time.Second, Refused: time.Second}

// TestCollectorDownAndUp sends batches through jitprof-otlp to a real
// Collector, over HTTP and over gRPC; stops the Collector for 10 s while
// more batches come, and starts it again: every batch arrives, and the
// Collector writes every sample of each.
func TestCollectorDownAndUp(t *testing.T) {
	exe := exporterPath(t)
	for _, proto := range []string{delivery.ProtocolHTTP, delivery.ProtocolGRPC} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			col := otelcoltest.Start(t, otelcoltest.Options{})
			cfg := delivery.Config{Endpoint: col.HTTP, Protocol: proto, Timeout: 5 * time.Second, Compression: "gzip"}
			if proto == delivery.ProtocolGRPC {
				cfg.Endpoint, cfg.Insecure = col.GRPC, true
			}
			child, err := delivery.NewChild(exe, cfg)
			if err != nil {
				t.Fatal(err)
			}
			sp, err := delivery.OpenSpoolDir(filepath.Join(t.TempDir(), "spool"), 64<<20)
			if err != nil {
				t.Fatal(err)
			}
			s := delivery.NewSender(sp, child, cfg.Endpoint, testBackoff)
			defer s.Close()
			n := 0
			for ; n < 5; n++ {
				s.Submit(testBatch(t, n))
			}
			waitStatus(t, s, time.Minute, func(st delivery.Status) bool { return st.Sent == 5 })
			col.Stop()
			down := time.Now()
			for ; n < 10; n++ {
				s.Submit(testBatch(t, n))
				time.Sleep(2 * time.Second)
			}
			st := waitStatus(t, s, time.Minute, func(st delivery.Status) bool { return st.LastError != "" && !st.LastErrorTime.Before(down) })
			if st.Queued == 0 || st.Sent != 5 {
				t.Errorf("with the Collector down: %+v, want batches queued and 5 sent", st)
			}
			t.Logf("down: %s", st.LastError)
			col.Restart()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if st := s.Status(); st.Sent < 10 || st.Dropped != 0 || st.Rejected != 0 {
				t.Errorf("after the Collector came back: %+v, want 10 sent, none dropped", st)
			}
			ss := col.WaitSamples(t, 10*samplesPerBatch, time.Minute)
			byID := map[[16]byte]int64{}
			for i := range ss {
				byID[ss[i].ProfileID] += ss[i].Count()
			}
			// One profile per batch (one process, one event); a batch
			// sent twice (its answer lost) would show as twice its
			// samples under one ID: at least once, never lost.
			if len(byID) != 10 {
				t.Errorf("%d batches arrived, want 10", len(byID))
			}
			for id, c := range byID {
				if c%samplesPerBatch != 0 || c == 0 {
					t.Errorf("batch %x: %d samples, want %d", id[:4], c, samplesPerBatch)
				} else if c > samplesPerBatch {
					t.Logf("batch %x arrived %d times", id[:4], c/samplesPerBatch)
				}
			}
		})
	}
}

// TestCollectorWrongToken: a Collector that refuses the token: the
// sender says so in its status, keeps the batches, and never shows the
// token.
func TestCollectorWrongToken(t *testing.T) {
	exe := exporterPath(t)
	const right, wrong = "right-token-4f1e", "wrong-token-9c2d"
	col := otelcoltest.Start(t, otelcoltest.Options{Token: right})
	for _, c := range []struct {
		token string
		want  func(delivery.Status) bool
	}{
		{wrong, func(st delivery.Status) bool { return strings.Contains(st.LastError, "refused the credentials") }},
		{right, func(st delivery.Status) bool { return st.Sent == 3 }},
	} {
		t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20"+c.token)
		child, err := delivery.NewChild(exe, delivery.Config{Endpoint: col.HTTP, Protocol: delivery.ProtocolHTTP, Timeout: 5 * time.Second, Compression: "gzip"})
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "spool")
		sp, err := delivery.OpenSpoolDir(dir, 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		s := delivery.NewSender(sp, child, col.HTTP, testBackoff)
		for n := range 3 {
			s.Submit(testBatch(t, n))
		}
		st := waitStatus(t, s, time.Minute, c.want)
		s.Close()
		if strings.Contains(st.LastError, c.token) {
			t.Errorf("the status shows the token: %q", st.LastError)
		}
		if c.token == wrong {
			t.Logf("wrong token: %s", st.LastError)
			if st.Queued != 3 || st.Dropped != 0 || st.Sent != 0 {
				t.Errorf("with a wrong token: %+v, want the 3 batches kept", st)
			}
		}
	}
	if got := col.WaitSamples(t, 3*samplesPerBatch, time.Minute); len(got) == 0 {
		t.Error("nothing arrived with the right token")
	}
}
