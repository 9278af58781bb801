package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"

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
	path, err := helperExecutable(name, what)
	if err != nil {
		return err
	}
	// Code jitprof runs, as root often: it passes the checks an anon
	// handler's host passes (docs/security.md, "Code jitprof runs"), and
	// what runs is the file checked, through its descriptor, not
	// whatever the path names by then.
	f, err := trust.OpenCode(path)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer f.Close()
	err = unix.Exec(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), append([]string{path}, args...), os.Environ())
	return fmt.Errorf("%s: %w", path, err)
}

// helperExecutable finds the executable name beside this executable, as
// go build -o DIR/ ./cmd/... and go install put it, else in $PATH.
func helperExecutable(name, what string) (string, error) {
	self, err := os.Executable()
	if err == nil {
		beside := filepath.Join(filepath.Dir(self), name)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	path, err := exec.LookPath(name)
	if err == nil {
		return path, nil
	}
	where := "beside " + self
	if self == "" {
		where = "beside this executable"
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s is its own executable, %s, found neither %s nor in $PATH: build it with go build -o DIR/ ./cmd/jitprof ./cmd/jitprof-web ./cmd/jitprof-top (README)", what, name, where)
	}
	return "", fmt.Errorf("%s: %w", name, err)
}
