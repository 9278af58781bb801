package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/jitprof/jitprof/internal/trust"
)

func init() {
	register(&command{name: "web", summary: "serve an interactive view of a recording: flame graph, top, source, disassembly, JIT generations", run: func(args []string) error {
		return runHelper("jitprof-web", "the web view", args)
	}})
	register(&command{name: "top", summary: "a live view of what runs, JIT code named as it runs (like perf top)", run: func(args []string) error {
		return runHelper("jitprof-top", "the live view", args)
	}})
}

// runHelper replaces jitprof with the executable name (cmd/jitprof-web,
// cmd/jitprof-top), which takes the same arguments: those commands are
// executables of their own so that what they link (pprof's web UI; a
// terminal UI) does not slow every other command's start (their docs).
func runHelper(name, what string, args []string) error {
	f, err := helperExecutable(name, what)
	if err != nil {
		return err
	}
	defer f.Close()
	// What runs is the file checked, not whatever the path names by then.
	err = f.Exec(append([]string{f.Name()}, args...), os.Environ())
	return fmt.Errorf("%s: %w", f.Name(), err)
}

// helperExecutable finds the executable name beside this executable, as
// go build -o DIR/ ./cmd/... and go install put it, else in $PATH, and
// opens it. It is code jitprof runs, as root often: a candidate must pass
// the checks an anon handler's host passes (docs/security.md, "Code
// jitprof runs"), and one refused is passed over for the next.
func helperExecutable(name, what string) (*trust.File, error) {
	self, err := os.Executable()
	var dirs []string
	if err == nil {
		dirs = append(dirs, filepath.Dir(self))
	}
	f, err := trust.FindCode(name, dirs...)
	if err == nil {
		return f, nil
	}
	where := "beside " + self
	if self == "" {
		where = "beside this executable"
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is its own executable, %s, found neither %s nor in $PATH: build it with go build -o DIR/ ./cmd/jitprof ./cmd/jitprof-web ./cmd/jitprof-top (README)", what, name, where)
	}
	return nil, err
}
