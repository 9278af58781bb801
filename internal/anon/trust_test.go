package anon

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/trust"
)

// TestTrust: handlers read a process's files through internal/trust, as
// the process sees them (under its Root) and judged by its recorded uid.
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
	const user, nobody = 1000, 65534
	good := []byte("1000 10 good\n")
	tests := []struct {
		name     string
		setup    func(t *testing.T, root string) // writes root/tmp/perf-PID.map
		uid      int
		reason   string // "" when the file is trusted
		forcible bool
	}{
		{"own file", func(t *testing.T, root string) { write(t, root, good, user) }, user, "", false},
		{"root's file, root's process", func(t *testing.T, root string) { write(t, root, good, 0) }, 0, "", false},
		// A user can bind-mount a root-owned file over their map in a
		// mount namespace of their own: root ownership proves nothing.
		{"root's file, a user's process", func(t *testing.T, root string) { write(t, root, good, 0) }, user, "owned by uid 0, not by uid 1000, the process's user", true},
		{"other user's file", func(t *testing.T, root string) { write(t, root, good, nobody) }, user, "owned by uid 65534, not by uid 1000", true},
		{"unknown user, the reporter's file", func(t *testing.T, root string) { write(t, root, good, 0) }, trust.UnknownOwner, "", false},
		{"unknown user, another's file", func(t *testing.T, root string) { write(t, root, good, user) }, trust.UnknownOwner, "owned by uid 1000, not by uid 0, the user running jitprof", true},
		{"symlink", func(t *testing.T, root string) {
			target := filepath.Join(root, "elsewhere")
			if err := os.WriteFile(target, good, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, mapPath(root)); err != nil {
				t.Fatal(err)
			}
		}, 0, "a symlink in its path", false},
		{"symlinked /tmp", func(t *testing.T, root string) {
			if err := os.Remove(filepath.Join(root, "tmp")); err != nil {
				t.Fatal(err)
			}
			other := t.TempDir()
			if err := os.WriteFile(filepath.Join(other, "perf-31337.map"), good, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, filepath.Join(root, "tmp")); err != nil {
				t.Fatal(err)
			}
		}, 0, "a symlink in its path", false},
		{"fifo", func(t *testing.T, root string) {
			if err := syscall.Mkfifo(mapPath(root), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 0, "not a regular file (a FIFO)", false},
		{"hard link", func(t *testing.T, root string) {
			write(t, root, good, user)
			if err := os.Link(mapPath(root), filepath.Join(root, "link")); err != nil {
				t.Fatal(err)
			}
		}, user, "2 hard links", true},
		{"huge", func(t *testing.T, root string) {
			write(t, root, good, 0)
			// Sparse: the size is what is checked, no disk is used.
			if err := os.Truncate(mapPath(root), trust.MaxSize+1); err != nil {
				t.Fatal(err)
			}
		}, 0, "bytes, over the limit of", true},
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
			if r != nil || len(errs) != 1 || !errors.Is(errs[0], trust.ErrUntrusted) {
				t.Fatalf("Claim = %v, %v; want an ErrUntrusted refusal", r, errs)
			}
			msg := errs[0].Error()
			for _, want := range []string{mapPath(root), tt.reason} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			p.Force = true
			r, _, errs = Claim(hs, p)
			if tt.forcible != (r != nil) {
				t.Errorf("Force: claimed %v, want %v (%v)", r != nil, tt.forcible, errs)
			}
		})
	}
}

// TestTrustRefusalEndsSearch: a refused file under the process's root is
// not passed over for the host's file of the same name, which another
// process may have written.
func TestTrustRefusalEndsSearch(t *testing.T) {
	pid := os.Getpid()
	name := "/tmp/perf-" + itoa(pid) + ".map"
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, name), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte("1000 10 host\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(name) })
	p := &Process{PID: pid, UID: os.Geteuid(), Root: root}
	hs, _ := Select([]string{"perfmap"})
	if r, _, errs := Claim(hs, p); r != nil || len(errs) != 1 || !errors.Is(errs[0], trust.ErrUntrusted) {
		t.Errorf("Claim = %v, %v; want the refusal of the process's own file", r, errs)
	}
}

// TestFillLive: the recorded uid wins over the live one, and a recorded
// start time tells a reused pid.
func TestFillLive(t *testing.T) {
	id, err := linux.Host.Identity(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	p := &Process{PID: os.Getpid(), UID: 4321, StartTime: id.StartTime}
	if !p.FillLive(linux.Host) || p.UID != 4321 || p.Root != "/proc/"+itoa(os.Getpid())+"/root" {
		t.Errorf("FillLive: %+v", p)
	}
	p = &Process{PID: os.Getpid(), UID: trust.UnknownOwner, Comm: "not this one"}
	if p.FillLive(linux.Host) || p.Root != "" {
		t.Errorf("FillLive accepted another command name: %+v", p)
	}
	p = &Process{PID: os.Getpid(), UID: trust.UnknownOwner}
	if !p.FillLive(linux.Host) || p.UID != os.Geteuid() {
		t.Errorf("FillLive without a recorded uid: %+v, want uid %d", p, os.Geteuid())
	}
	p = &Process{PID: os.Getpid(), UID: 4321, StartTime: id.StartTime + 1}
	if p.FillLive(linux.Host) || p.Root != "" {
		t.Errorf("FillLive accepted another start time: %+v", p)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if p := (&Process{PID: cmd.Process.Pid}); p.FillLive(linux.Host) {
		t.Errorf("FillLive of an exited process: %+v", p)
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

// TestErrorsQuoteNothing: whatever a JIT data file holds, what the
// handlers say of it (errors, the resolver's source) names the file, the
// offset and the reason, never its bytes, even when --force made jitprof
// read a file it would have refused.
func TestErrorsQuoteNothing(t *testing.T) {
	const secret = "s3cr3tmarker"
	shadow := []byte("root:$6$" + secret + ":19000:0:99999:7:::\n" + secret + " 10 x\n1000 " + secret + " y\n" + strings.Repeat("daemon:*:19000:0:99999:7:::\n", 8))
	root := t.TempDir()
	pid := 31337
	for _, f := range []string{"/tmp/perf-31337.map", "/tmp/jit-31337.dump", "/tmp/jitprof-4321/anon.31337"} {
		path := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, shadow, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []string{"perfmap", "jitdump", "jitlog"} {
		// Owned by us, not by the process's uid 4321: only --force reads it.
		p := &Process{PID: pid, UID: 4321, Root: root, Force: true}
		hs, err := Select([]string{h})
		if err != nil {
			t.Fatal(err)
		}
		r, _, errs := Claim(hs, p)
		said := fmt.Sprint(errs)
		if r != nil {
			said += r.Source()
			r.Close()
		}
		if r == nil && len(errs) == 0 {
			t.Errorf("%s: neither a claim nor an error", h)
		}
		if strings.Contains(said, "s3cr3t") || strings.Contains(said, "root:") {
			t.Errorf("%s quotes the file: %s", h, said)
		}
		if !strings.Contains(said, root) || !strings.Contains(said, "offset") {
			t.Errorf("%s does not say which file and where: %s", h, said)
		}
	}
}
