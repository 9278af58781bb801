package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/delivery"
	"github.com/jitprof/jitprof/internal/driver"
)

func init() {
	register(&command{name: "push", summary: "send a recording's profile to an OpenTelemetry Collector (OTLP profiles)", run: runPush})
}

// pushRetryFor is how long push tries a Collector that is down or busy:
// the OpenTelemetry SDKs' bound.
const pushRetryFor = time.Minute

func runPush(args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	input := fs.String("i", "perf.data", "input `file`")
	fs.StringVar(input, "input", "perf.data", "same as -i")
	var filterFlags cli.FilterFlags
	filterFlags.Register(fs)
	var jit cli.AnonFlags
	jit.Register(fs)
	var ot cli.OTLPFlags
	ot.RegisterResource(fs)
	ot.RegisterExport(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof push [-i FILE] [--otlp-endpoint URL] [--otlp-protocol http/protobuf|grpc] [--anon-samples] [filters]\n\nSends the recording's profile, as report would make it, to an OpenTelemetry Collector (docs/fleet.md).")
		cli.PrintFlags(fs)
	}
	pos, err := cli.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fs.Usage()
		return cli.ErrUsage
	}
	filter, err := filterFlags.Parse()
	if err != nil {
		fmt.Fprintf(fs.Output(), "jitprof push: %v\n", err)
		return cli.ErrUsage
	}
	resource, err := ot.Resource(os.Getenv)
	if err != nil {
		return err
	}
	cfg, err := ot.Config(os.Getenv)
	if err != nil {
		return err
	}
	exe, err := delivery.FindExporter()
	if err != nil {
		return err
	}
	// Before the recording is read: a wrong setting or headers file is
	// said at once.
	child, err := delivery.NewChild(exe, cfg)
	if err != nil {
		return err
	}
	defer child.Close()
	src, err := driver.OpenRecording(*input, jit.Force)
	if err != nil {
		return err
	}
	opts := driver.Options{
		LoadOptions: driver.LoadOptions{Progress: cli.ProgressBar(os.Stderr)},
		JIT:         jit.Options(), Filter: filter, Command: "push", Log: os.Stderr,
	}
	req, err := driver.EncodeOTLP(context.Background(), src, opts, resource)
	if err != nil {
		return err
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(req.Bytes)
	if err := zw.Close(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), pushRetryFor)
	defer cancel()
	if _, err := delivery.SendOne(ctx, child, z.Bytes(), delivery.DefaultBackoff); err != nil {
		return fmt.Errorf("%s: %w", cfg.Endpoint, err)
	}
	if err := child.Close(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "jitprof push: %d samples of %d processes sent to %s (%s, %d bytes, %d compressed)\n",
		req.Samples, req.Processes, cfg.Endpoint, cfg.Protocol, len(req.Bytes), z.Len())
	return nil
}
