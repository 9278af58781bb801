package main

import (
	"os"
	"runtime/debug"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/termtext"
)

func main() {
	// jitprof runs this file through the descriptor it checked
	// (/proc/self/fd/N), which the kernel makes the process's name:
	// give ps, top and perf the executable's.
	unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&[]byte("jitprof-web\x00")[0])), 0, 0, 0)
	// As every jitprof command but the daemon (cmd/jitprof's main): a
	// profile loaded once and kept is not worth collecting at every
	// doubling of the heap; a GOGC the user set wins.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(400)
	}
	code := cli.ExitStatus("web", runWeb(os.Args[1:]), stderrText)
	stderrText.Flush()
	os.Exit(code)
}

// stderrText is standard error for the view's messages and pprof's:
// they name what processes named, which a terminal must not act on
// (internal/termtext).
var stderrText = termtext.NewWriter(os.Stderr)
