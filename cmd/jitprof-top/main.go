package main

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/cli"
)

func main() {
	// jitprof runs this file through the descriptor it checked
	// (/proc/self/fd/N), which the kernel makes the process's name:
	// give ps, top and perf the executable's.
	unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&[]byte("jitprof-top\x00")[0])), 0, 0, 0)
	os.Exit(cli.ExitStatus("top", runTop(os.Args[1:]), os.Stderr))
}
