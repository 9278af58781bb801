package trust

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindCode: the first executable candidate that passes OpenCode, in
// the directories given, then $PATH's absolute ones; refused candidates,
// files that are not executable and missing ones are passed over.
func TestFindCode(t *testing.T) {
	mk := func(mode os.FileMode) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "tool"), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(dir, "tool"), mode) // past the umask
		return dir
	}
	writable, plain, good, later := mk(0o777), mk(0o644), mk(0o755), mk(0o755)
	empty := t.TempDir()
	linked := filepath.Join(t.TempDir(), "linked")
	os.Symlink(good, linked)
	t.Setenv("PATH", strings.Join([]string{"relative", writable, later}, ":"))

	f, err := FindCode("tool", empty, linked, plain, writable, good)
	if err != nil || f.Name() != filepath.Join(good, "tool") {
		t.Fatalf("FindCode = %v, %v; want %s", f, err, filepath.Join(good, "tool"))
	}
	f.Close()
	// From $PATH, past the refused one.
	if f, err = FindCode("tool"); err != nil || f.Name() != filepath.Join(later, "tool") {
		t.Fatalf("FindCode on PATH = %v, %v; want %s", f, err, filepath.Join(later, "tool"))
	}
	f.Close()
	t.Setenv("PATH", writable)
	if _, err := FindCode("tool", linked); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "a symlink in its path") || !strings.Contains(err.Error(), "writable by its group or by others") {
		t.Errorf("every candidate refused: %v, want each refusal", err)
	}
	if _, err := FindCode("none", empty); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no candidate: %v, want fs.ErrNotExist", err)
	}
}
