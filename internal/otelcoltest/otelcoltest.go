// Package otelcoltest runs a real OpenTelemetry Collector for tests: the
// one test/otelcol builds from the Collector's Go modules, in a module of
// its own, with the OTLP receiver (HTTP and gRPC), the file exporter and,
// when a test asks, a bearer token the receiver requires. It runs as its
// own process, with a YAML configuration and the profiles feature gate,
// and what it received is read back with the Collector's own pdata
// (internal/otlp/otlptest).
package otelcoltest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/otlp/otlptest"
)

// Env names the Collector binary to use instead of building one: test.sh
// builds it once for every test package.
const Env = "JITPROF_OTELCOL"

var build struct {
	once sync.Once
	path string
	err  error
}

// Binary returns the test Collector's path: $JITPROF_OTELCOL, else the
// one built from test/otelcol, once per version of its source and kept
// between runs (the Collector takes minutes to build the first time).
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(Env); p != "" {
		return p
	}
	build.once.Do(func() { build.path, build.err = buildCollector() })
	if build.err != nil {
		t.Fatalf("building the test Collector: %v", build.err)
	}
	return build.path
}

func buildCollector() (string, error) {
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "..", "..", "test", "otelcol")
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum", "main.go"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("jitprof-otelcol-%x", h.Sum(nil)[:6]))
	path := filepath.Join(dir, "otelcol-jitprof")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.%d", path, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, ".")
	cmd.Dir = src
	// The tests' own flags (-race, -cover) are not the Collector's.
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build in %s: %v\n%s", src, err, out)
	}
	// Rename is atomic: test binaries building at once each install a
	// whole file.
	return path, os.Rename(tmp, path)
}

// Options configure a Collector.
type Options struct {
	// Token, when set, is the bearer token the receiver requires
	// (Authorization: Bearer TOKEN).
	Token string
}

// Collector is a running test Collector.
type Collector struct {
	// HTTP is the OTLP/HTTP profiles endpoint's URL, GRPC the gRPC
	// server's host:port.
	HTTP, GRPC string
	t          testing.TB
	dir        string
	config     string
	cmd        *exec.Cmd
	exited     chan error
	log        *lockedWriter
}

// Start starts a Collector on free loopback ports; it is stopped when
// the test ends.
func Start(t testing.TB, opts Options) *Collector {
	t.Helper()
	bin := Binary(t)
	c := &Collector{t: t, dir: t.TempDir()}
	httpPort, grpcPort := freePort(t), freePort(t)
	c.HTTP = fmt.Sprintf("http://127.0.0.1:%d/v1development/profiles", httpPort)
	c.GRPC = fmt.Sprintf("127.0.0.1:%d", grpcPort)
	auth, ext, extList := "", "", ""
	if opts.Token != "" {
		auth = "\n        auth:\n          authenticator: bearertokenauth"
		ext = fmt.Sprintf("extensions:\n  bearertokenauth:\n    token: %q\n", opts.Token)
		extList = "\n  extensions: [bearertokenauth]"
	}
	config := fmt.Sprintf(`%sreceivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d%s
      http:
        endpoint: 127.0.0.1:%d%s
exporters:
  file:
    path: %s
    format: proto
    append: true
    flush_interval: 50ms
service:%s
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [file]
`, ext, grpcPort, auth, httpPort, auth, filepath.Join(c.dir, "received.pb"), extList)
	c.config = filepath.Join(c.dir, "config.yaml")
	if err := os.WriteFile(c.config, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	c.start(bin)
	t.Cleanup(c.Stop)
	return c
}

// freePort returns a loopback TCP port no one listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startTimeout bounds a Collector's start: on a loaded machine it can
// take seconds.
const startTimeout = 2 * time.Minute

func (c *Collector) start(bin string) {
	c.t.Helper()
	c.log = &lockedWriter{}
	c.cmd = exec.Command(bin, "--config", c.config, "--feature-gates=+service.profilesSupport")
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.exited = make(chan error, 1)
	go func() { c.exited <- c.cmd.Wait() }()
	deadline := time.Now().Add(startTimeout)
	for !strings.Contains(c.log.String(), "Everything is ready") {
		select {
		case err := <-c.exited:
			c.cmd = nil
			c.t.Fatalf("the Collector exited: %v\n%s", err, c.log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.Stop()
			c.t.Fatalf("the Collector did not start within %v:\n%s", startTimeout, c.log.String())
		}
	}
}

// Stop stops the Collector (SIGTERM: it flushes what it received) and
// waits for it.
func (c *Collector) Stop() {
	if c.cmd == nil {
		return
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(time.Minute):
		c.cmd.Process.Kill()
		<-c.exited
	}
	c.cmd = nil
}

// Restart starts the Collector again, on the same ports, after Stop.
func (c *Collector) Restart() {
	c.t.Helper()
	c.start(Binary(c.t))
}

// Log is what the Collector wrote to its output.
func (c *Collector) Log() string { return c.log.String() }

// Received returns the samples the Collector wrote, decoded with pdata
// and checked (otlptest.DecodeFile).
func (c *Collector) Received(t testing.TB) []otlptest.Sample {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, "received.pb"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	ss, err := otlptest.DecodeFile(b)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// WaitSamples waits until the Collector wrote at least n samples (their
// values' sum), at most d, and returns what it received.
func (c *Collector) WaitSamples(t testing.TB, n int64, d time.Duration) []otlptest.Sample {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ss := c.Received(t)
		var got int64
		for i := range ss {
			got += ss[i].Count()
		}
		if got >= n || time.Now().After(deadline) {
			return ss
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type lockedWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
