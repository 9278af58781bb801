package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/jitprof/jitprof/internal/driver"
	"github.com/jitprof/jitprof/internal/report"
	"github.com/jitprof/jitprof/internal/web"
)

func init() {
	register(&command{name: "web", summary: "serve an interactive view of a recording: flame graph, top, source, disassembly, JIT generations", run: runWeb})
}

func runWeb(args []string) error {
	fs := flag.NewFlagSet("web", flag.ContinueOnError)
	input := fs.String("i", "perf.data", "input `file`")
	fs.StringVar(input, "input", "perf.data", "same as -i")
	addr := fs.String("http", "localhost:0", "serve on `host:port` (port 0: a free one); another host than a loopback one lets anyone who reaches it read the profile")
	open := fs.Bool("open", false, "open the view in a browser (not when CI is set)")
	var filter filterFlags
	filter.register(fs)
	var jit anonFlags
	jit.register(fs)
	var sess sessionFlags // the daemon's sessions: session.go
	sess.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof web [-i FILE | --session[=NAME] [SPEC...]] [--http HOST:PORT] [--open] [--anon-samples] [--comms ...] [--pid ...] [--tid ...] [--dsos ...] [--cpu ...]")
		printFlags(fs)
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 && !sess.enabled() {
		fs.Usage()
		return errUsage
	}
	f, err := filter.parse()
	if err != nil {
		fmt.Fprintf(fs.Output(), "jitprof web: %v\n", err)
		return errUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	name := *input
	if sess.enabled() {
		name = "the daemon's session"
	}
	load := func(ctx context.Context) (*web.Recording, error) {
		var src driver.Source
		if sess.enabled() {
			src, err = sess.source(&jit, pos) // read again at each reload, as the daemon counts on
		} else {
			src, err = driver.OpenRecording(*input, jit.force)
		}
		if err != nil {
			return nil, err
		}
		// Lines and addresses: the source and disassembly views use them.
		l, err := driver.Load(ctx, src, driver.Options{
			LoadOptions: driver.LoadOptions{Lines: true, Addresses: true, Progress: progressBar(os.Stderr)},
			JIT:         jit.options(), Filter: f, ExcludeJIT: true, Command: "web", Log: os.Stderr,
		})
		if err != nil {
			return nil, err
		}
		return &web.Recording{Profile: l.Profile, Name: l.Name, Notes: l.Notes, Claims: l.Claims, Close: func() { l.Close() }}, nil
	}
	srv, err := web.New(ctx, web.Options{Load: load, Log: os.Stderr})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		srv.Close()
		return err
	}
	// The address carries the server's token: only who has it may look.
	url := srv.URL(ln.Addr())
	fmt.Printf("jitprof web: serving %s on %s (Ctrl-C stops)\n", name, url)
	if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		fmt.Fprintf(os.Stderr, "jitprof web: warning: listening on %s, not a loopback address: whoever reaches it can read the profile (command lines, paths, JIT code)\n", ln.Addr())
	}
	if *open {
		if os.Getenv("CI") != "" {
			fmt.Fprintln(os.Stderr, "jitprof web: CI is set: not opening a browser")
		} else if err := web.OpenBrowser(url); err != nil {
			fmt.Fprintf(os.Stderr, "jitprof web: %v\n", err)
		}
	}
	return srv.Serve(ctx, ln)
}

// filterFlags are perf report's sample filters, spelled as perf's:
// --comms, --pid, --tid, --dsos and --cpu.
type filterFlags struct {
	comms, pids, tids, dsos, cpus string
}

func (ff *filterFlags) register(fs *flag.FlagSet) {
	for _, name := range []string{"comms", "comm", "c"} {
		fs.StringVar(&ff.comms, name, "", "only the samples of these `commands` (comma-separated); --comms, --comm and -c are one")
	}
	fs.StringVar(&ff.pids, "pid", "", "only the samples of these `pids` (comma-separated)")
	fs.StringVar(&ff.tids, "tid", "", "only the samples of these `tids` (comma-separated)")
	for _, name := range []string{"dsos", "dso", "d"} {
		fs.StringVar(&ff.dsos, name, "", "only the samples whose leaf is in these `images` (paths or base names, comma-separated); --dsos, --dso and -d are one")
	}
	for _, name := range []string{"cpu", "C"} {
		fs.StringVar(&ff.cpus, name, "", "only the samples of these `cpus` (e.g. 0-3,5), percentages of theirs as perf's; --cpu and -C are one")
	}
}

func (ff *filterFlags) parse() (report.Filter, error) {
	return reportFilter(ff.comms, ff.pids, ff.tids, ff.dsos, ff.cpus)
}
