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
	register(&command{name: "web", summary: "serve an interactive view of a recording: flame graph, top, source, disassembly, JIT generations", run: runWeb})
}

// webCommand is the executable that serves the web view (cmd/jitprof-web).
const webCommand = "jitprof-web"

// runWeb replaces jitprof with jitprof-web, which takes the same
// arguments: the web UI is an executable of its own so that what it links
// does not slow every other command's start (cmd/jitprof-web's doc).
func runWeb(args []string) error {
	path, err := webExecutable()
	if err != nil {
		return err
	}
	// Code jitprof runs, as root often: it passes the checks an anon
	// handler's host passes (docs/security.md, "Code jitprof runs"), and
	// what runs is the file checked, through its descriptor, not
	// whatever the path names by then.
	f, err := trust.OpenCode(path)
	if err != nil {
		return fmt.Errorf("%s: %w", webCommand, err)
	}
	defer f.Close()
	err = unix.Exec(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), append([]string{path}, args...), os.Environ())
	return fmt.Errorf("%s: %w", path, err)
}

// webExecutable finds jitprof-web beside this executable, as go build -o
// DIR/ ./cmd/... and go install put it, else in $PATH.
func webExecutable() (string, error) {
	self, err := os.Executable()
	if err == nil {
		beside := filepath.Join(filepath.Dir(self), webCommand)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	path, err := exec.LookPath(webCommand)
	if err == nil {
		return path, nil
	}
	where := "beside " + self
	if self == "" {
		where = "beside this executable"
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("the web view is its own executable, %s, found neither %s nor in $PATH: build it with go build -o DIR/ ./cmd/jitprof ./cmd/jitprof-web (README)", webCommand, where)
	}
	return "", fmt.Errorf("%s: %w", webCommand, err)
}
