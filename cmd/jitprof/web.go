package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/trust"
)

func init() {
	register(&command{name: "web", summary: "serve an interactive view of a recording: flame graph, top, source, disassembly, JIT generations", run: runWeb})
}

// webCommand is the executable that serves the web view (cmd/jitprof-web).
const webCommand = "jitprof-web"

// runWeb replaces jitprof with jitprof-web, which takes the same
// arguments: the web UI is an executable of its own so that what it links
// does not slow every other command's start (cmd/jitprof-web's doc).
func runWeb(args []string) error {
	f, err := webExecutable()
	if err != nil {
		return err
	}
	defer f.Close()
	// What runs is the file checked, through its descriptor, not
	// whatever the path names by then.
	err = unix.Exec(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), append([]string{f.Name()}, args...), os.Environ())
	return fmt.Errorf("%s: %w", f.Name(), err)
}

// webExecutable finds jitprof-web beside this executable, as go build -o
// DIR/ ./cmd/... and go install put it, else in $PATH, and opens it. It
// is code jitprof runs, as root often: a candidate must pass the checks
// an anon handler's host passes (docs/security.md, "Code jitprof runs"),
// and one refused is passed over for the next.
func webExecutable() (*trust.File, error) {
	self, err := os.Executable()
	var dirs []string
	if err == nil {
		dirs = append(dirs, filepath.Dir(self))
	}
	f, err := trust.FindCode(webCommand, dirs...)
	if err == nil {
		return f, nil
	}
	where := "beside " + self
	if self == "" {
		where = "beside this executable"
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the web view is its own executable, %s, found neither %s nor in $PATH: build it with go build -o DIR/ ./cmd/jitprof ./cmd/jitprof-web (README)", webCommand, where)
	}
	return nil, err
}
