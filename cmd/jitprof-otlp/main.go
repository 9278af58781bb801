package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/delivery"
	"github.com/jitprof/jitprof/internal/otlpsend"
)

func main() {
	// jitprof runs this file through the descriptor it checked
	// (/proc/self/fd/3), which the kernel makes the process's name:
	// give ps and top the executable's.
	unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&[]byte("jitprof-otlp\x00")[0])), 0, 0, 0)
	if err := run(os.Args[1:], pollable(os.Stdin), os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "jitprof-otlp: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("jitprof-otlp", flag.ContinueOnError)
	var cfg delivery.Config
	cfg.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof-otlp --endpoint URL [--protocol http/protobuf|grpc] [flags] <batches\n\njitprof runs it to send OTLP profiles (jitprof push, the daemon): it reads batches from standard input and writes a result for each.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected arguments")
	}
	headers, err := delivery.Headers(cfg, os.Getenv)
	if err != nil {
		return err
	}
	c, err := otlpsend.New(cfg, headers, version())
	if err != nil {
		return err
	}
	defer c.Close()
	return serve(c, in, out)
}

// serve sends each batch read from in and writes how it went to out,
// until in ends.
func serve(exp delivery.Exporter, in io.Reader, out io.Writer) error {
	for {
		batch, err := delivery.ReadFrame(in)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := delivery.WriteResult(out, exp.Export(context.Background(), batch)); err != nil {
			return err
		}
	}
}

// pollable returns f, a pipe from jitprof, made non-blocking so that
// reading it waits in the Go runtime's poller: a goroutine blocked in
// read(2) keeps its P, and the runtime's sysmon thread then wakes every
// 20 µs, then less often, until it takes the P back 10 ms later, after
// every batch. Where the descriptor is not a pipe or socket, f as it
// is.
func pollable(f *os.File) *os.File {
	fd := int(f.Fd()) // os.Stdin is blocking: Fd leaves it so
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO && st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return f
	}
	if unix.SetNonblock(fd, true) != nil {
		return f
	}
	// NewFile takes a non-blocking descriptor into the poller.
	return os.NewFile(uintptr(fd), f.Name())
}

func version() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		return info.Main.Version
	}
	return "(unknown)"
}
