package trust

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Every case runs twice: with openat2 and with the component walk that
// kernels without it get.
func bothWays(t *testing.T, fn func(t *testing.T)) {
	for _, use := range []bool{true, false} {
		name := "openat2"
		if !use {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			old := openat2
			openat2 = use
			t.Cleanup(func() { openat2 = old })
			fn(t)
		})
	}
}

func TestOpen(t *testing.T) {
	bothWays(t, testOpen)
}

func testOpen(t *testing.T) {
	dir := t.TempDir()
	me := os.Geteuid()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("1000 10 f\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	linkedDir := filepath.Join(dir, "linkeddir")
	if err := os.Symlink(dir, linkedDir); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	twice := filepath.Join(dir, "twice")
	if err := os.WriteFile(twice, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(twice, filepath.Join(dir, "twice2")); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Sparse: the size is checked, no disk is used.
	if err := os.Truncate(big, MaxSize+1); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		path     string
		rule     Rule
		reason   string // "" when accepted
		forcible bool   // Force accepts it
	}{
		{"own file", good, Rule{Owner: me}, "", false},
		{"own file, owner unknown", good, Rule{Owner: UnknownOwner}, "", false},
		{"relative", "good", Rule{Owner: me}, "", false},
		{"another user's", good, Rule{Owner: me + 1}, "owned by uid", true},
		{"root's, for a user's process", "/etc/hostname", Rule{Owner: 1000}, "owned by uid 0, not by uid 1000", true},
		{"symlink", link, Rule{Owner: me}, "a symlink in its path", false},
		{"symlinked directory", filepath.Join(linkedDir, "good"), Rule{Owner: me}, "a symlink in its path", false},
		{"magic link", "/proc/self/exe", Rule{Owner: me}, "a symlink in its path", false},
		{"fifo", fifo, Rule{Owner: me}, "not a regular file (a FIFO)", false},
		{"device", "/dev/null", Rule{Owner: 0}, "not a regular file (a character device)", false},
		{"directory", dir, Rule{Owner: me}, "not a regular file (a directory)", false},
		{"hard link", twice, Rule{Owner: me}, "2 hard links", true},
		{"over the limit", big, Rule{Owner: me}, "over the limit of 1073741824", true},
		{"over a lower limit", good, Rule{Owner: me, Limit: 4}, "10 bytes, over the limit of 4", true},
	}
	t.Chdir(dir)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Open(tt.path, tt.rule)
			if tt.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				b, err := io.ReadAll(f)
				if err != nil || string(b) != "1000 10 f\n" || f.Size != 10 {
					t.Errorf("read %q (size %d), %v", b, f.Size, err)
				}
				return
			}
			if err == nil {
				f.Close()
				t.Fatalf("accepted %s", tt.path)
			}
			if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), tt.reason) || !strings.Contains(err.Error(), tt.path) {
				t.Errorf("error %q: want ErrUntrusted naming %s and saying %q", err, tt.path, tt.reason)
			}
			if strings.Contains(err.Error(), "--force") != tt.forcible {
				t.Errorf("error %q: says --force helps: %v, want %v", err, !tt.forcible, tt.forcible)
			}
			rule := tt.rule
			rule.Force = true
			f, err = Open(tt.path, rule)
			if tt.forcible {
				if err != nil {
					t.Errorf("Force: %v", err)
				} else {
					f.Close()
				}
			} else if err == nil {
				f.Close()
				t.Errorf("Force opened %s", tt.path)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		if _, err := Open(filepath.Join(dir, "missing"), Rule{Owner: me}); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("error %v, want fs.ErrNotExist", err)
		}
	})
}

// TestOpenIn: paths are resolved inside the root, as the process sees
// them; symlinks, even ones that would stay inside, are not followed.
func TestOpenIn(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		root := t.TempDir()
		me := os.Geteuid()
		if err := os.MkdirAll(filepath.Join(root, "tmp"), 0o755); err != nil {
			t.Fatal(err)
		}
		mapPath := filepath.Join(root, "tmp", "perf-1.map")
		if err := os.WriteFile(mapPath, []byte("1000 10 f\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// The process's /tmp/perf-2.map points at "/etc/hostname": in its
		// root, not ours, were it followed.
		if err := os.Symlink("/etc/hostname", filepath.Join(root, "tmp", "perf-2.map")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("perf-1.map", filepath.Join(root, "tmp", "perf-3.map")); err != nil {
			t.Fatal(err)
		}
		f, err := OpenIn(root, "/tmp/perf-1.map", Rule{Owner: me})
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if f.Name() != mapPath {
			t.Errorf("file named %s, want %s", f.Name(), mapPath)
		}
		for _, p := range []string{"/tmp/perf-2.map", "/tmp/perf-3.map"} {
			_, err := OpenIn(root, p, Rule{Owner: me, Force: true})
			if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), filepath.Join(root, p)) {
				t.Errorf("%s: %v, want a refusal naming it", p, err)
			}
		}
		// ".." cannot climb out of the root: clamped by openat2, refused
		// by the walk.
		escape := "/../../../../../../.." + mapPath
		if _, err := OpenIn(root, escape, Rule{Owner: me}); err == nil {
			t.Errorf("%s opened from inside %s", escape, root)
		}
	})
}

func TestCheckSize(t *testing.T) {
	r := Rule{Owner: 0, Limit: 100}
	if err := r.CheckSize("f", 100); err != nil {
		t.Error(err)
	}
	if err := r.CheckSize("f", 101); !errors.Is(err, ErrUntrusted) {
		t.Errorf("101 bytes: %v", err)
	}
	r.Force = true
	if err := r.CheckSize("f", 101); err != nil {
		t.Errorf("forced: %v", err)
	}
}
