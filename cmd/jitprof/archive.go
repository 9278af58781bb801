package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/jitprof/jitprof/internal/archive"
	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/driver"
)

func init() {
	register(&command{name: "archive", summary: "pack a recording with the images, debug files, sources and kernel symbols its reports read (like perf archive, oparchive)", run: runArchive})
}

func runArchive(args []string) error {
	fs := flag.NewFlagSet("archive", flag.ContinueOnError)
	output := fs.String("o", "", "write the archive to `file` (default FILE.jitprof.tar.gz)")
	var jit cli.AnonFlags
	jit.Register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: jitprof archive [-o OUT] [FILE]  (FILE: perf.data by default; report it elsewhere with jitprof report --archive OUT)")
		cli.PrintFlags(fs)
	}
	pos, err := cli.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		fs.Usage()
		return cli.ErrUsage
	}
	in := "perf.data"
	if len(pos) == 1 {
		in = pos[0]
	}
	out := *output
	if out == "" {
		out = in + ".jitprof.tar.gz"
	}
	src, err := driver.OpenRecording(in, jit.Force)
	if err != nil {
		return err
	}
	own := []driver.OwnFile{{Name: archive.RecordingName, Path: in, Role: archive.RoleRecording}}
	o := driver.Options{JIT: jit.Options(), Command: "archive", Log: os.Stderr}
	m, err := driver.WriteArchive(context.Background(), src, archive.KindRecording, in, own, o, out)
	if err != nil {
		return err
	}
	cli.TellArchive(os.Stderr, "archive", out, m)
	return nil
}
