package delivery

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/jitprof/jitprof/internal/tailbuf"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/trust"
)

// ExporterCommand is the executable that sends batches (cmd/jitprof-otlp).
const ExporterCommand = "jitprof-otlp"

// FindExporter finds jitprof-otlp beside this executable, as go build -o
// DIR/ ./cmd/... and go install put it, else in $PATH.
func FindExporter() (string, error) {
	self, err := os.Executable()
	if err == nil {
		beside := filepath.Join(filepath.Dir(self), ExporterCommand)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	path, err := exec.LookPath(ExporterCommand)
	if err == nil {
		return path, nil
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("sending OTLP takes %s, an executable of its own, found neither beside jitprof nor in $PATH: build it with go build -o DIR/ ./cmd/jitprof ./cmd/jitprof-otlp (README)", ExporterCommand)
	}
	return "", fmt.Errorf("%s: %w", ExporterCommand, err)
}

// Child is the Exporter that sends through a jitprof-otlp process, which
// it starts on the first batch and again after the process ends. The
// process inherits jitprof's environment (OTEL_EXPORTER_OTLP_HEADERS
// among it) and reads the headers file itself: no secret is on its
// command line.
type Child struct {
	path string
	cfg  Config

	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *tailbuf.Buffer
}

// NewChild returns an Exporter that runs the jitprof-otlp at path with
// cfg. It checks cfg and the headers (Headers) now, so that what is
// wrong with them is said before the first batch.
func NewChild(path string, cfg Config) (*Child, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if _, err := Headers(cfg, os.Getenv); err != nil {
		return nil, err
	}
	return &Child{path: path, cfg: cfg}, nil
}

// answerGrace is how long past its timeout jitprof-otlp may take to
// answer before it is taken for hung.
const answerGrace = 5 * time.Second

// Export implements Exporter.
func (c *Child) Export(ctx context.Context, batch []byte) Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		if err := c.start(); err != nil {
			return Result{Outcome: Retry, Message: err.Error()}
		}
	}
	type answer struct {
		r   Result
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		err := WriteFrame(c.in, batch)
		var r Result
		if err == nil {
			r, err = ReadResult(c.out)
		}
		ch <- answer{r, err}
	}()
	t := time.NewTimer(c.cfg.Timeout + answerGrace)
	defer t.Stop()
	select {
	case a := <-ch:
		if a.err == nil {
			return a.r
		}
		return Result{Outcome: Retry, Message: c.end(fmt.Sprintf("%s stopped answering: %v", ExporterCommand, a.err))}
	case <-t.C:
		msg := c.end(fmt.Sprintf("%s did not answer within %v", ExporterCommand, c.cfg.Timeout+answerGrace))
		<-ch
		return Result{Outcome: Retry, Message: msg}
	case <-ctx.Done():
		c.end("")
		<-ch
		return Result{Outcome: Retry, Message: ctx.Err().Error()}
	}
}

// start runs jitprof-otlp: the file that passed the checks for code
// jitprof runs (trust.OpenCode), by its descriptor, so that what runs is
// what was checked.
func (c *Child) start() error {
	f, err := trust.OpenCode(c.path)
	if err != nil {
		return fmt.Errorf("%s: %w", ExporterCommand, err)
	}
	defer f.Close()
	cmd := exec.Command(linux.FDPath(3), c.cfg.Args()...)
	cmd.Args[0] = c.path
	cmd.ExtraFiles = []*os.File{f.File}
	// Its own process group, so that ending it ends what it started. It
	// exits when its input ends, as it does when jitprof does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	c.stderr = tailbuf.New(4096)
	cmd.Stderr = c.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("%s: %w", ExporterCommand, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("%s: %w", ExporterCommand, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", ExporterCommand, err)
	}
	c.cmd, c.in, c.out = cmd, in, bufio.NewReader(out)
	return nil
}

// end kills jitprof-otlp and returns why, with what it last wrote to its
// standard error (it never writes a secret there).
func (c *Child) end(why string) string {
	syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	err := c.cmd.Wait()
	c.cmd = nil
	if why == "" {
		return ""
	}
	if s := strings.TrimSpace(c.stderr.String()); s != "" {
		return why + ": " + s
	}
	if err != nil {
		return why + ": " + err.Error()
	}
	return why
}

// Close ends jitprof-otlp: its input closes and it exits.
func (c *Child) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return nil
	}
	c.in.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		c.cmd = nil
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("%s: %w: %s", ExporterCommand, err, strings.TrimSpace(c.stderr.String()))
		}
		return err
	case <-time.After(c.cfg.Timeout + answerGrace):
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-done
		c.cmd = nil
		return fmt.Errorf("%s did not exit when its input ended", ExporterCommand)
	}
}
