package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jitprof/jitprof/internal/sampledb"
)

// startTimeout bounds how long Start waits for the daemon to sample.
const startTimeout = time.Minute

// readyEnv names the descriptor on which the daemon Start started says
// it samples ("ok") or why it could not ("error: ...").
const readyEnv = "JITPROF_DAEMON_READY_FD"

// Start starts `jitprof daemon run ARGS --session-dir DIR` (this
// executable) in the background, in a session of its own, its output in
// dir's daemon.log, and returns its pid once it samples, or why it could
// not. args are the flags `daemon start` was given; a stale pid file is
// removed, and notice told of it.
func Start(dir string, args []string, notice func(string)) (int, error) {
	pid, stale, err := Running(dir)
	if err != nil {
		return 0, err
	}
	if pid != 0 && !stale {
		return 0, fmt.Errorf("a daemon is running on %s (pid %d)", dir, pid)
	}
	if stale {
		notice(fmt.Sprintf("removing the stale pid file of pid %d (a daemon that was killed)", pid))
		RemoveStale(dir)
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	logf, err := OpenLog(dir)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	runArgs := append([]string{"daemon"}, args...)
	for i, a := range runArgs {
		if a == "start" {
			runArgs[i] = "run"
			break
		}
	}
	// The daemon runs in /: a relative directory would move.
	runArgs = append(runArgs, "--session-dir", dir)
	cmd := exec.Command(exe, runArgs...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{pw}
	cmd.Env = append(os.Environ(), readyEnv+"=3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		pw.Close()
		pr.Close()
		return 0, err
	}
	pw.Close()
	done := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(pr).ReadString('\n')
		done <- strings.TrimSpace(line)
	}()
	var msg string
	select {
	case msg = <-done:
	case <-time.After(startTimeout):
		cmd.Process.Kill()
		msg = "error: the daemon did not start within " + startTimeout.String()
	}
	pr.Close()
	if msg == "ok" {
		pid := cmd.Process.Pid
		cmd.Process.Release()
		return pid, nil
	}
	cmd.Wait()
	if msg == "" {
		msg = "error: the daemon exited; see " + filepath.Join(dir, LogFile)
	}
	return 0, errors.New(strings.TrimPrefix(msg, "error: "))
}

// RunStarted is the daemon itself, as Start runs it (`jitprof daemon
// run`): Run, logging to logw, telling Start on its ready descriptor
// once it samples, or why it could not.
func RunStarted(ctx context.Context, cfg Config, logw io.Writer) error {
	var ready *os.File
	if fd, err := strconv.Atoi(os.Getenv(readyEnv)); err == nil && fd > 2 {
		ready = os.NewFile(uintptr(fd), "ready")
		os.Unsetenv(readyEnv)
	}
	log.SetPrefix(fmt.Sprintf("jitprof daemon[%d]: ", os.Getpid()))
	log.SetOutput(logw)
	log.Printf("starting on %s", cfg.Dir)
	err := Run(ctx, cfg, func() {
		log.Printf("sampling")
		if ready != nil {
			io.WriteString(ready, "ok\n")
			ready.Close()
			ready = nil
		}
	})
	if err != nil {
		log.Printf("stopped: %v", err)
		if ready != nil {
			io.WriteString(ready, "error: "+strings.ReplaceAll(err.Error(), "\n", "; ")+"\n")
			ready.Close()
		}
		return err
	}
	log.Printf("stopped")
	return nil
}

// Stop asks the daemon of session directory dir to stop and waits until
// it has exited; it returns the daemon's pid.
func Stop(dir string) (int, error) {
	pid, stale, err := Running(dir)
	if err != nil {
		return 0, err
	}
	if stale {
		RemoveStale(dir)
		return 0, fmt.Errorf("%s: %w (removed the stale pid file of pid %d)", dir, ErrNotRunning, pid)
	}
	if _, err := Ask(dir, "stop", ""); err != nil {
		return 0, err
	}
	// The daemon removes its pid file last of all.
	for range 600 {
		if p, _, _ := Running(dir); p == 0 {
			return pid, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, fmt.Errorf("daemon pid %d did not exit", pid)
}

// Control asks the daemon of session directory dir to dump, reset or
// save (as name) its session; without a daemon, the session is reset or
// saved directly (dump then fails with ErrNotRunning).
func Control(dir, op, name string) error {
	_, err := Ask(dir, op, name)
	if errors.Is(err, ErrNotRunning) {
		switch op {
		case "reset":
			err = sampledb.Reset(dir)
		case "save":
			err = sampledb.Save(dir, name)
		}
	}
	return err
}
