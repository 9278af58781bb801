package anon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestTrust(t *testing.T) {
	if os.Geteuid() != 0 {
		// chown to another user and the owner check need root; the
		// checks exist for a report run as root.
		if os.Getenv("CI") == "true" {
			t.Fatal("trust tests need root, and CI runs them as root")
		}
		t.Skip("needs root to chown files to another user")
	}
	const pid = 31337
	const nobody = 65534
	good := []byte("1000 10 good\n")
	tests := []struct {
		name   string
		setup  func(t *testing.T, root string) // writes root/tmp/perf-PID.map
		uid    int
		reason string // "" when the file is trusted
	}{
		{"own file", func(t *testing.T, root string) { write(t, root, good, 1000) }, 1000, ""},
		{"root's file", func(t *testing.T, root string) { write(t, root, good, 0) }, 1000, ""},
		{"other user's file", func(t *testing.T, root string) { write(t, root, good, nobody) }, 1000, "owned by uid 65534, not by the process's uid 1000 or root"},
		{"symlink", func(t *testing.T, root string) {
			target := filepath.Join(root, "elsewhere")
			if err := os.WriteFile(target, good, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, mapPath(root)); err != nil {
				t.Fatal(err)
			}
		}, 0, "is a symlink"},
		{"fifo", func(t *testing.T, root string) {
			if err := syscall.Mkfifo(mapPath(root), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 0, "not a regular file"},
		{"huge", func(t *testing.T, root string) {
			write(t, root, good, 0)
			// Sparse: the size is what is checked, no disk is used.
			if err := os.Truncate(mapPath(root), MaxFileSize+1); err != nil {
				t.Fatal(err)
			}
		}, 0, "bytes, over the limit of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.Mkdir(filepath.Join(root, "tmp"), 0o755); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, root)
			p := &Process{PID: pid, UID: tt.uid, Root: root}
			hs, _ := Select([]string{"perfmap"})
			r, _, errs := Claim(hs, p)
			if tt.reason == "" {
				if r == nil {
					t.Fatalf("refused a trusted file: %v", errs)
				}
				return
			}
			if r != nil || len(errs) != 1 || !errors.Is(errs[0], ErrUntrusted) {
				t.Fatalf("Claim = %v, %v; want an ErrUntrusted refusal", r, errs)
			}
			msg := errs[0].Error()
			for _, want := range []string{mapPath(root), tt.reason, "--force"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if tt.name == "fifo" {
				return // forced, a fifo would be read until its writer closes
			}
			p.Force = true
			if r, _, errs := Claim(hs, p); r == nil {
				t.Errorf("Force did not override: %v", errs)
			}
		})
	}
}

func mapPath(root string) string { return filepath.Join(root, "tmp", "perf-31337.map") }

func write(t *testing.T, root string, b []byte, uid int) {
	t.Helper()
	if err := os.WriteFile(mapPath(root), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(mapPath(root), uid, uid); err != nil {
		t.Fatal(err)
	}
}
