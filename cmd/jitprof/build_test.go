package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The executables the tests run are built once per test binary: a go
// build of jitprof, jitprof-web and jitprof-top links three binaries
// even with every package cached, 4 CPU seconds and 15 s of a loaded
// machine's wall clock, and some thirty tests each wanted their own.
// Each test gets copies in a directory of its own (not links: the trust
// checks of jitprof-web, jitprof-top and jitprof-otlp refuse a file with
// more than one link).
var built struct {
	once sync.Once
	dir  string
	err  error
}

// builtExecutables are what built.dir holds, and the package each is
// built from.
var builtExecutables = map[string]string{
	"jitprof":      ".",
	"jitprof-web":  "../jitprof-web",
	"jitprof-top":  "../jitprof-top",
	"jitprof-otlp": "../jitprof-otlp",
	"minijit":      "../../examples/minijit",
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// builtCopy copies the executable name, built once, into dir and returns
// its path there.
func builtCopy(t *testing.T, name, dir string) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "jitprof-test-bin"); built.err != nil {
			return
		}
		for exe, pkg := range builtExecutables {
			if out, err := exec.Command("go", "build", "-o", filepath.Join(built.dir, exe), pkg).CombinedOutput(); err != nil {
				built.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	dst := filepath.Join(dir, name)
	if err := copyExecutable(filepath.Join(built.dir, name), dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// buildJitprof puts jitprof, and jitprof-web and jitprof-top beside it
// where it looks for them, in dir, and returns jitprof's path.
func buildJitprof(t *testing.T, dir string) string {
	t.Helper()
	for _, name := range []string{"jitprof-web", "jitprof-top"} {
		builtCopy(t, name, dir)
	}
	return builtCopy(t, "jitprof", dir)
}
