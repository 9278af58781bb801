package main

import (
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
	os.Exit(cli.ExitStatus("web", runWeb(os.Args[1:]), os.Stderr))
}
