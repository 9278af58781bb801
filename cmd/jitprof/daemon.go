package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/daemon"
	"github.com/jitprof/jitprof/internal/perfevent"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/internal/termtext"
)

func init() {
	register(&command{name: "daemon", summary: "the always-on profiler: start, status, dump, stop, reset, save NAME (OProfile's opcontrol)", run: runDaemon})
}

const daemonUsage = `usage: jitprof daemon start [-a | -p PID[,PID]] [-e EVENT] [-F HZ | -c PERIOD] [-g] [--separate=none,lib,kernel,thread,cpu,all] [--session-dir DIR] [--max-jit-data SIZE] [--max-jit-data-per-process SIZE] [--max-sample-files N] [--max-sample-data SIZE]
       jitprof daemon status|dump|stop|reset [--session-dir DIR]
       jitprof daemon save NAME [--archive] [--session-dir DIR]`

// startTimeout bounds how long start waits for the daemon to sample.
const startTimeout = time.Minute

func runDaemon(args []string) error {
	fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
	var cfg daemon.Config
	fs.StringVar(&cfg.Event, "e", perfevent.DefaultEvent, "`event` to sample, as for record")
	fs.Uint64Var(&cfg.Freq, "F", 0, fmt.Sprintf("sample at this `frequency` in Hz (default %d)", daemon.DefaultFreq))
	fs.Uint64Var(&cfg.Period, "c", 0, "sample every `period` events (instead of -F)")
	fs.BoolVar(&cfg.Callchain, "g", false, "count the callchains' arcs too ({cg} sample files)")
	fs.BoolVar(&cfg.SystemWide, "a", false, "profile every CPU (the default without -p)")
	pids := fs.String("p", "", "profile only these `pids` (comma-separated) and their children")
	sep := fs.String("separate", "none", "keep sample files apart by: a comma list of none, lib, kernel, thread, cpu, all")
	dir := fs.String("session-dir", "", "the session `directory` (default $JITPROF_SESSION_DIR, else /var/lib/jitprof for root, ~/.local/share/jitprof for others)")
	flush := fs.Duration("flush", daemon.DefaultFlushEvery, "write counts to the sample files this `often`")
	archiveIt := fs.Bool("archive", false, "save: also write NAME.jitprof.tar.gz here, the session with the images, debug and source files and kernel symbols its reports read (report it anywhere with jitprof report --archive)")
	maxJIT, maxJITProc := sizeFlag(daemon.DefaultMaxJITData), sizeFlag(daemon.DefaultMaxJITDataPerProcess)
	fs.Var(&maxJIT, "max-jit-data", "copy at most this `size` of JIT data into the session, all processes together")
	fs.Var(&maxJITProc, "max-jit-data-per-process", "copy at most this `size` of one process's JIT data into the session")
	fs.IntVar(&cfg.MaxSampleFiles, "max-sample-files", daemon.DefaultMaxSampleFiles, "keep at most this `number` of sample files in the session")
	maxSample := sizeFlag(daemon.DefaultMaxSampleData)
	fs.Var(&maxSample, "max-sample-data", "keep at most this `size` of sample files in the session")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), daemonUsage)
		cli.PrintFlags(fs)
	}
	pos, err := cli.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return cli.ErrUsage
	}
	if *dir == "" {
		*dir = daemon.DefaultDir()
	}
	if cfg.Dir, err = filepath.Abs(*dir); err != nil {
		return err
	}
	op, rest := pos[0], pos[1:]
	wantArgs := 0
	if op == "save" {
		wantArgs = 1
	}
	if len(rest) != wantArgs {
		fs.Usage()
		return cli.ErrUsage
	}
	switch op {
	case "start", "run":
		if cfg.Separate, err = sampledb.ParseSeparate(*sep); err != nil {
			return err
		}
		if cfg.PIDs, err = cli.IDList(*pids); err != nil {
			return err
		}
		cfg.SystemWide = len(cfg.PIDs) == 0
		cfg.FlushEvery = *flush
		if cfg.MaxSampleFiles <= 0 {
			return fmt.Errorf("--max-sample-files %d: want a positive number", cfg.MaxSampleFiles)
		}
		cfg.MaxJITData, cfg.MaxJITDataPerProcess, cfg.MaxSampleData = int64(maxJIT), int64(maxJITProc), int64(maxSample)
		if op == "run" {
			return daemonRun(cfg)
		}
		return daemonStart(cfg.Dir, args)
	case "status":
		st, err := daemon.Ask(cfg.Dir, "status", "")
		if err != nil {
			return err
		}
		out := termtext.NewWriter(os.Stdout) // what processes named, escaped
		printStatus(out, st)
		return out.Flush()
	case "dump", "reset", "save":
		name := ""
		if op == "save" {
			name = rest[0]
		}
		_, err := daemon.Ask(cfg.Dir, op, name)
		if errors.Is(err, daemon.ErrNotRunning) {
			// Without a daemon, the session is reset or saved directly.
			switch op {
			case "reset":
				err = sampledb.Reset(cfg.Dir)
			case "save":
				err = sampledb.Save(cfg.Dir, name)
			}
		}
		if err != nil || !*archiveIt || op != "save" {
			return err
		}
		return cli.ArchiveSession(cfg.Dir, name, name+".jitprof.tar.gz", os.Stderr)
	case "stop":
		return daemonStop(cfg.Dir)
	}
	fs.Usage()
	return cli.ErrUsage
}

// daemonStart starts `jitprof daemon run` in the background, in its own
// session, its output in the session directory's daemon.log, and
// returns once it samples (it says so on a pipe) or has failed.
func daemonStart(dir string, args []string) error {
	pid, stale, err := daemon.Running(dir)
	if err != nil {
		return err
	}
	if pid != 0 && !stale {
		return fmt.Errorf("a daemon is running on %s (pid %d)", dir, pid)
	}
	if stale {
		fmt.Fprintf(stderrText, "jitprof daemon: removing the stale pid file of pid %d (a daemon that was killed)\n", pid)
		daemon.RemoveStale(dir)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logf, err := daemon.OpenLog(dir)
	if err != nil {
		return err
	}
	defer logf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
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
	cmd.Env = append(os.Environ(), "JITPROF_DAEMON_READY_FD=3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		pw.Close()
		pr.Close()
		return err
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
		fmt.Fprintf(stderrText, "jitprof daemon: sampling (pid %d), session in %s\n", cmd.Process.Pid, dir)
		cmd.Process.Release()
		return nil
	}
	cmd.Wait()
	if msg == "" {
		msg = "error: the daemon exited; see " + filepath.Join(dir, daemon.LogFile)
	}
	return errors.New(strings.TrimPrefix(msg, "error: "))
}

// daemonRun is the daemon itself (`jitprof daemon run`, which start
// runs): it tells start on its ready pipe once it samples, or why it
// could not.
func daemonRun(cfg daemon.Config) error {
	var ready *os.File
	if fd, err := strconv.Atoi(os.Getenv("JITPROF_DAEMON_READY_FD")); err == nil && fd > 2 {
		ready = os.NewFile(uintptr(fd), "ready")
		os.Unsetenv("JITPROF_DAEMON_READY_FD")
	}
	log.SetPrefix(fmt.Sprintf("jitprof daemon[%d]: ", os.Getpid()))
	log.SetOutput(stderrText) // its log is read on terminals too
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	log.Printf("starting on %s", cfg.Dir)
	err := daemon.Run(ctx, cfg, func() {
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

// daemonStop asks the daemon to stop and waits until it has exited.
func daemonStop(dir string) error {
	pid, stale, err := daemon.Running(dir)
	if err != nil {
		return err
	}
	if stale {
		daemon.RemoveStale(dir)
		return fmt.Errorf("%s: %w (removed the stale pid file of pid %d)", dir, daemon.ErrNotRunning, pid)
	}
	if _, err := daemon.Ask(dir, "stop", ""); err != nil {
		return err
	}
	// The daemon removes its pid file last of all.
	for range 600 {
		if p, _, _ := daemon.Running(dir); p == 0 {
			fmt.Printf("jitprof daemon: stopped (pid %d); the session stays in %s (jitprof report --session)\n", pid, dir)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("daemon pid %d did not exit", pid)
}

func printStatus(w io.Writer, st *daemon.Status) {
	fmt.Fprintf(w, "daemon:          pid %d, up %s (since %s)\n", st.PID, time.Since(st.Start).Round(time.Second), st.Start.Format(time.RFC3339))
	fmt.Fprintf(w, "session:         %s\n", st.Dir)
	fmt.Fprintf(w, "target:          %s\n", st.Target)
	for _, ev := range st.SessionEvents {
		count := strconv.FormatUint(ev.Count, 10)
		if ev.Freq {
			count = strconv.FormatUint(ev.Count, 10) + " Hz"
		}
		fmt.Fprintf(w, "event:           %s, %s, %d lost in this session\n", ev.Name, count, ev.Lost)
	}
	fmt.Fprintf(w, "separate:        %s\n", st.Separate)
	fmt.Fprintf(w, "call graph:      %v\n", st.CallGraph)
	fmt.Fprintf(w, "samples:         %d (%d lost, %d in no mapping)\n", st.Samples, st.Lost, st.Unresolved)
	what := "samples"
	if st.CallGraph {
		what = "samples and arcs"
	}
	fmt.Fprintf(w, "counts:          %d %s, %d in files, %d dropped\n", st.Counts, what, st.Flushed, st.Dropped)
	fmt.Fprintf(w, "sample files:    %d, %d open; %d of at most %d in the session, %.1f MB of at most %s\n",
		st.Files, st.OpenFiles, st.SampleFiles, st.MaxSampleFiles, float64(st.SampleData)/1e6, formatSize(st.MaxSampleData))
	if st.Refused > 0 {
		fmt.Fprintf(w, "refused:         %d samples, at the session's bound of sample files or bytes\n", st.Refused)
	}
	fmt.Fprintf(w, "JIT processes:   %d\n", st.JITProcesses)
	fmt.Fprintf(w, "JIT data:        %.1f MB in the session, of at most %s (%s a process)\n",
		float64(st.JITData)/1e6, formatSize(st.MaxJITData), formatSize(st.MaxJITDataPerProcess))
	if st.JITBounded > 0 {
		fmt.Fprintf(w, "JIT bounds:      %d processes' JIT data met a bound: their later code is not followed\n", st.JITBounded)
	}
	if !st.LastFlush.IsZero() {
		fmt.Fprintf(w, "last flush:      %s\n", st.LastFlush.Format(time.RFC3339))
	}
	disk := "ok"
	if st.DiskFull {
		disk = "FULL: counts wait in memory until there is room"
	}
	fmt.Fprintf(w, "disk:            %s\n", disk)
	if st.FlushError != "" {
		fmt.Fprintf(w, "flush error:     %s\n", st.FlushError)
	}
	for _, e := range st.JITErrors {
		fmt.Fprintf(w, "JIT data:        %s\n", e)
	}
}
