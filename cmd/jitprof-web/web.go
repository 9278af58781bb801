package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/driver"
	"github.com/jitprof/jitprof/internal/termtext"
	"github.com/jitprof/jitprof/internal/web"
)

func runWeb(args []string) error {
	fs := flag.NewFlagSet("web", flag.ContinueOnError)
	addr := fs.String("http", "localhost:0", "serve on `host:port` (port 0: a free one); another host than a loopback one lets anyone who reaches it read the profile")
	open := fs.Bool("open", false, "open the view in a browser (not when CI is set)")
	diffBase := fs.String("diff-base", "", "compare with the recording or session (session:NAME) `BASE`, as pprof -diff_base: its samples negated, JIT code matched by name across runs")
	exact := fs.Bool("exact-names", false, "with --diff-base, match JIT code by its names as reported, generations and tier marks included")
	var filter cli.FilterFlags
	filter.Register(fs)
	var jit cli.AnonFlags
	jit.Register(fs)
	var in cli.InputFlags
	in.Register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof web [-i FILE | --session[=NAME] [SPEC...]] [--http HOST:PORT] [--open] [--anon-samples] [--comms ...] [--pid ...] [--tid ...] [--dsos ...] [--cpu ...]")
		cli.PrintFlags(fs)
	}
	pos, err := cli.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := in.Check(fs, "web", pos); err != nil {
		return err
	}
	f, err := filter.Parse()
	if err != nil {
		fmt.Fprintf(fs.Output(), "jitprof web: %v\n", err)
		return cli.ErrUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	name := in.Name()
	// Lines and addresses: the source and disassembly views use them.
	opts := driver.Options{
		LoadOptions: driver.LoadOptions{Lines: true, Addresses: true, Progress: cli.ProgressBar(os.Stderr)},
		JIT:         jit.Options(), Filter: f, ExcludeJIT: true, Command: "web", Log: stderrText,
	}
	load := func(ctx context.Context) (*web.Recording, error) {
		src, err := in.Source(&jit, pos) // a session is read again at each reload, as the daemon counts on
		if err != nil {
			return nil, err
		}
		l, err := driver.Load(ctx, src, opts)
		if err != nil {
			return nil, err
		}
		rec := &web.Recording{Profile: l.Profile, Name: l.Name, Notes: l.Notes, Claims: l.Claims, Close: func() { l.Close() }, ExactNames: *exact,
			Symbolizer: l.Files.Symbolizer, OpenSource: l.Files.OpenSource}
		if *diffBase == "" {
			return rec, nil
		}
		src, err = in.Session.Input(&jit, *diffBase)
		if err == nil {
			var b *driver.Loaded
			if b, err = driver.Load(ctx, src, opts); err == nil {
				rec.Base = b.Profile
				rec.Notes = append(rec.Notes, fmt.Sprintf("compared with %s, as pprof -diff_base: its samples negated, percentages of its total; the process selection is this recording's, the base is compared whole", b.Name))
				for _, n := range b.Notes {
					rec.Notes = append(rec.Notes, b.Name+": "+n)
				}
				rec.Close = func() { l.Close(); b.Close() }
				return rec, nil
			}
		}
		l.Close()
		return nil, fmt.Errorf("--diff-base: %w", err)
	}
	srv, err := web.New(ctx, web.Options{Load: load, Log: stderrText})
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
	fmt.Printf("jitprof web: serving %s on %s (Ctrl-C stops)\n", termtext.Escape(name), url)
	if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		fmt.Fprintf(stderrText, "jitprof web: warning: listening on %s, not a loopback address: whoever reaches it can read the profile (command lines, paths, JIT code)\n", ln.Addr())
	}
	if *open {
		if os.Getenv("CI") != "" {
			fmt.Fprintln(stderrText, "jitprof web: CI is set: not opening a browser")
		} else if err := web.OpenBrowser(url); err != nil {
			fmt.Fprintf(stderrText, "jitprof web: %v\n", err)
		}
	}
	return srv.Serve(ctx, ln)
}
