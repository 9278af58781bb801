package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/cli/sampling"
	"github.com/jitprof/jitprof/internal/daemon"
	"github.com/jitprof/jitprof/internal/delivery"
	"github.com/jitprof/jitprof/internal/ingest"
	"github.com/jitprof/jitprof/internal/termtext"
)

func init() {
	register(&command{name: "daemon", summary: "the always-on profiler: start, status, dump, stop, reset, save NAME (OProfile's opcontrol)", run: runDaemon})
}

const daemonUsage = `usage: jitprof daemon start [-a | -p PID[,PID] | -t TID] [-C CPUS] [-e EVENT] [-F HZ | -c PERIOD] [-g [dwarf[,SIZE]] | --call-graph fp|dwarf[,SIZE]] [-m PAGES] [--separate=none,lib,kernel,thread,cpu,all] [--session-dir DIR] [--max-jit-data SIZE] [--max-jit-data-per-process SIZE] [--max-sample-files N] [--max-sample-data SIZE]
         [--otlp-endpoint URL [--otlp-protocol http/protobuf|grpc] [--otlp-interval D] [--otlp-spool-max SIZE] [--otlp-ca FILE] [--otlp-cert FILE --otlp-key FILE] [--otlp-headers-file FILE] [--service-name NAME]]
       jitprof daemon status|dump|stop|reset [--session-dir DIR]
       jitprof daemon save NAME [--archive] [--session-dir DIR]`

func runDaemon(args []string) error {
	fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
	var cfg daemon.Config
	sample := sampling.Flags{DefaultFreq: daemon.DefaultFreq}
	sample.Register(fs)
	var graph sampling.CallGraph
	graph.Register(fs, "count the callchains' arcs too ({cg} sample files): frame pointers, or with -g dwarf the user stacks unwound as they come")
	var sep cli.Separate
	sep.Register(fs)
	var dir cli.SessionDir
	dir.Register(fs)
	flush := fs.Duration("flush", daemon.DefaultFlushEvery, "write counts to the sample files this `often`")
	archiveIt := fs.Bool("archive", false, "save: also write NAME.jitprof.tar.gz here, the session with the images, debug and source files and kernel symbols its reports read (report it anywhere with jitprof report --archive)")
	maxJIT, maxJITProc := cli.Size(ingest.DefaultMaxJITData), cli.Size(ingest.DefaultMaxJITDataPerProcess)
	fs.Var(&maxJIT, "max-jit-data", "copy at most this `size` of JIT data into the session, all processes together")
	fs.Var(&maxJITProc, "max-jit-data-per-process", "copy at most this `size` of one process's JIT data into the session")
	fs.IntVar(&cfg.MaxSampleFiles, "max-sample-files", ingest.DefaultMaxSampleFiles, "keep at most this `number` of sample files in the session")
	maxSample := cli.Size(ingest.DefaultMaxSampleData)
	fs.Var(&maxSample, "max-sample-data", "keep at most this `size` of sample files in the session")
	var ot cli.OTLPFlags
	ot.RegisterResource(fs)
	ot.RegisterExport(fs)
	pushEvery := fs.Duration("otlp-interval", daemon.DefaultPushEvery, "push what was sampled since the last push every `interval` (with --otlp-endpoint)")
	spoolMax := cli.Size(daemon.DefaultSpoolMax)
	fs.Var(&spoolMax, "otlp-spool-max", "keep at most this `size` of batches not yet sent in the session directory (the oldest are dropped, and counted)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), daemonUsage)
		cli.PrintFlags(fs)
	}
	pos, err := cli.ParseArgs(fs, sampling.JoinMode(args))
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return cli.ErrUsage
	}
	if cfg.Dir, err = dir.Abs(); err != nil {
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
		var targets int
		if cfg.Sample, targets, err = sample.Config(fs); err != nil {
			fmt.Fprintf(fs.Output(), "jitprof daemon: %v\n", err)
			return cli.ErrUsage
		}
		if targets > 1 {
			fmt.Fprintln(fs.Output(), "jitprof daemon: give one of -a, -p and -t (every CPU without them)")
			return cli.ErrUsage
		}
		cfg.Sample.SystemWide = len(cfg.Sample.PIDs)+len(cfg.Sample.TIDs) == 0
		graph.Apply(&cfg.Sample)
		cfg.Separate = sep.Separate
		cfg.FlushEvery = *flush
		if cfg.MaxSampleFiles <= 0 {
			return fmt.Errorf("--max-sample-files %d: want a positive number", cfg.MaxSampleFiles)
		}
		cfg.MaxJITData, cfg.MaxJITDataPerProcess, cfg.MaxSampleData = int64(maxJIT), int64(maxJITProc), int64(maxSample)
		if ot.Push(os.Getenv) {
			if cfg.Push, err = pushConfig(&ot, *pushEvery, int64(spoolMax)); err != nil {
				return err
			}
		}
		if op == "run" {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
			return daemon.RunStarted(ctx, cfg, stderrText) // its log is read on terminals too
		}
		pid, err := daemon.Start(cfg.Dir, args, func(msg string) { fmt.Fprintf(stderrText, "jitprof daemon: %s\n", msg) })
		if err != nil {
			return err
		}
		fmt.Fprintf(stderrText, "jitprof daemon: sampling (pid %d), session in %s\n", pid, cfg.Dir)
		if cfg.Push != nil {
			fmt.Fprintf(stderrText, "jitprof daemon: pushing to %s (%s) every %v\n", cfg.Push.Delivery.Endpoint, cfg.Push.Delivery.Protocol, cfg.Push.Every)
		}
		return nil
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
		if err := daemon.Control(cfg.Dir, op, name); err != nil || !*archiveIt || op != "save" {
			return err
		}
		return cli.ArchiveSession(cfg.Dir, name, name+".jitprof.tar.gz", os.Stderr)
	case "stop":
		pid, err := daemon.Stop(cfg.Dir)
		if err != nil {
			return err
		}
		fmt.Printf("jitprof daemon: stopped (pid %d); the session stays in %s (jitprof report --session)\n", pid, cfg.Dir)
		return nil
	}
	fs.Usage()
	return cli.ErrUsage
}

// pushConfig is the daemon's push as the flags and the environment say.
func pushConfig(ot *cli.OTLPFlags, every time.Duration, spoolMax int64) (*daemon.Push, error) {
	if every < time.Second {
		return nil, fmt.Errorf("--otlp-interval %v: at least 1s", every)
	}
	if spoolMax < 1<<20 {
		return nil, fmt.Errorf("--otlp-spool-max %s: at least 1M", cli.FormatSize(spoolMax))
	}
	res, err := ot.Resource(os.Getenv)
	if err != nil {
		return nil, err
	}
	dc, err := ot.Config(os.Getenv)
	if err != nil {
		return nil, err
	}
	exe, err := delivery.FindExporter()
	if err != nil {
		return nil, err
	}
	return &daemon.Push{Exporter: exe, Delivery: dc, Resource: res, Every: every, SpoolMax: spoolMax}, nil
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
	switch {
	case st.CallGraph && st.UserStack != 0:
		fmt.Fprintf(w, "call graph:      dwarf (%d bytes of user stack a sample, unwound as counted)\n", st.UserStack)
	case st.CallGraph:
		fmt.Fprintf(w, "call graph:      frame pointers\n")
	default:
		fmt.Fprintf(w, "call graph:      none\n")
	}
	fmt.Fprintf(w, "samples:         %d (%d lost, %d in no mapping", st.Samples, st.Lost, st.Unresolved)
	if st.ResyncReads > 0 {
		fmt.Fprintf(w, "; mappings read again from /proc after losses: %d times, %d found some", st.ResyncReads, st.Resynced)
	}
	fmt.Fprintf(w, ")\n")
	what := "samples"
	if st.CallGraph {
		what = "samples and arcs"
	}
	fmt.Fprintf(w, "counts:          %d %s, %d in files, %d dropped\n", st.Counts, what, st.Flushed, st.Dropped)
	fmt.Fprintf(w, "sample files:    %d, %d open; %d of at most %d in the session, %.1f MB of at most %s\n",
		st.Files, st.OpenFiles, st.SampleFiles, st.MaxSampleFiles, float64(st.SampleData)/1e6, cli.FormatSize(st.MaxSampleData))
	if st.Refused > 0 {
		fmt.Fprintf(w, "refused:         %d samples, at the session's bound of sample files or bytes\n", st.Refused)
	}
	fmt.Fprintf(w, "JIT processes:   %d\n", st.JITProcesses)
	fmt.Fprintf(w, "JIT data:        %.1f MB in the session, of at most %s (%s a process)\n",
		float64(st.JITData)/1e6, cli.FormatSize(st.MaxJITData), cli.FormatSize(st.MaxJITDataPerProcess))
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
	if st.OTLP != nil {
		printPush(w, st.OTLP)
	}
}

// printPush prints the push's status: what daemon.PushStatus holds,
// which has no header's value in it.
func printPush(w io.Writer, o *daemon.PushStatus) {
	fmt.Fprintf(w, "otlp endpoint:   %s (%s), every %v\n", o.Endpoint, o.Protocol, o.Every)
	last := "never"
	if !o.LastSuccess.IsZero() {
		last = fmt.Sprintf("%s (%s ago)", o.LastSuccess.Format(time.RFC3339), time.Since(o.LastSuccess).Round(time.Second))
	}
	fmt.Fprintf(w, "otlp success:    %s\n", last)
	fmt.Fprintf(w, "otlp sent:       %d batches, %d bytes (compressed)\n", o.Sent, o.SentBytes)
	fmt.Fprintf(w, "otlp queued:     %d batches, %d bytes in the spool, of at most %s\n", o.Queued, o.QueuedBytes, cli.FormatSize(o.SpoolMax))
	fmt.Fprintf(w, "otlp dropped:    %d batches, %d bytes (the oldest, at the spool's bound); %d rejected by the Collector\n", o.Dropped, o.DroppedBytes, o.Rejected)
	fmt.Fprintf(w, "otlp samples:    %d in batches, %d waiting for the next push, %d dropped\n", o.Samples, o.Waiting, o.DroppedSamples)
	if o.RejectedProfiles > 0 {
		fmt.Fprintf(w, "otlp rejected:   %d profiles (partial successes)\n", o.RejectedProfiles)
	}
	if o.LastError != "" {
		fmt.Fprintf(w, "otlp error:      %s (%s)\n", o.LastError, o.LastErrorTime.Format(time.RFC3339))
		if !o.Retry.IsZero() {
			fmt.Fprintf(w, "otlp retry:      %s\n", o.Retry.Format(time.RFC3339))
		}
	}
	if o.SpoolError != "" {
		fmt.Fprintf(w, "otlp spool:      %s\n", o.SpoolError)
	}
}
