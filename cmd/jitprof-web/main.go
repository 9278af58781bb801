package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/jitprof/jitprof/internal/cli"
)

func main() {
	// As every jitprof command but the daemon (cmd/jitprof's main): a
	// profile loaded once and kept is not worth collecting at every
	// doubling of the heap; a GOGC the user set wins.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(400)
	}
	err := runWeb(os.Args[1:])
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, cli.ErrUsage):
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "jitprof web: %v\n", err)
	os.Exit(1)
}
