package anon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/trust"
)

// A handler can be a shared library (seed 001's libNAME.so) with the C
// interface of agent/jitprof_anon.h. jitprof does not load it: it runs
// HostName, which dlopen()s the library and speaks the external
// protocol, as an external handler, so that the library's crashes,
// hangs and leaks are the host's.
const (
	// HostName is the executable that hosts handler libraries.
	HostName = "jitprof-anon-host"
	// LibraryPathEnv lists directories searched for handler libraries
	// before LibraryDirs, separated by colons.
	LibraryPathEnv = "JITPROF_ANON_PATH"
	// HostEnv, when set, is the host executable to use.
	HostEnv = "JITPROF_ANON_HOST"
)

// LibraryDirs are searched for libjitprof-anon-NAME.so and libNAME.so
// after $JITPROF_ANON_PATH.
var libraryDirs = []string{"/usr/local/lib/jitprof", "/usr/lib/jitprof"}

// LibraryDirs returns the directories searched for handler libraries, in
// order.
func LibraryDirs() []string {
	var dirs []string
	for _, d := range strings.Split(os.Getenv(LibraryPathEnv), ":") {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return append(dirs, libraryDirs...)
}

// findLibrary finds the library of --anon-handler=name: name itself when
// it is a path ending in .so, else libjitprof-anon-NAME.so or libNAME.so
// in LibraryDirs. fs.ErrNotExist when there is none.
func findLibrary(name string) (string, error) {
	if strings.Contains(name, "/") {
		if strings.HasSuffix(name, ".so") || strings.Contains(name, ".so.") {
			return name, nil
		}
		return "", fs.ErrNotExist
	}
	for _, dir := range LibraryDirs() {
		for _, base := range []string{"lib" + ExternalPrefix + name + ".so", "lib" + name + ".so"} {
			p := filepath.Join(dir, base)
			if _, err := os.Lstat(p); err == nil {
				return p, nil
			}
		}
	}
	return "", fs.ErrNotExist
}

// findHost finds the host of handler libraries and opens it after the
// trust checks for code: $JITPROF_ANON_HOST, else jitprof-anon-host
// beside jitprof's executable or on PATH, where a candidate refused is
// passed over for the next (trust.FindCode).
func findHost() (*trust.File, error) {
	if h := os.Getenv(HostEnv); h != "" {
		return trust.OpenCode(h)
	}
	var dirs []string
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	f, err := trust.FindCode(HostName, dirs...)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no %s beside jitprof, on PATH or in $%s: build it with make -C agent", HostName, HostEnv)
	}
	return f, err
}

// libraryHandler returns the external handler that runs the library at
// path in the host. Both pass the trust checks for code (internal/trust
// OpenCode) and stay open: the library is handed to the host as
// descriptor 3, and the host is run through its descriptor, so the files
// loaded and run are the ones checked.
func libraryHandler(name, path string, b *budget) (Handler, error) {
	lib, err := trust.OpenCode(path)
	if err != nil {
		return nil, err
	}
	host, err := findHost()
	if err != nil {
		lib.Close()
		return nil, fmt.Errorf("the library %s: %w", path, err)
	}
	// The descriptors stay open for every host started: they are closed
	// with jitprof.
	return &external{name: name, path: host.Name(), exe: host.File, args: []string{linux.FDPath(3), path}, files: []*os.File{lib.File}, shown: path, budget: b}, nil
}
