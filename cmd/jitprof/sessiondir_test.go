package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

// TestDaemonSessionDirAttack is issue 26's attack on a daemon root runs
// in a session directory another user can write: they plant daemon.log
// or jitprofd.pid as links to a root file, or samples/current as a link
// to a root directory, or a socket of theirs as the control socket.
// Root's jitprof refuses the directory (it, or one above it, is the
// user's) before it writes anything, the root file and directory stay
// as they were, and no daemon is left running; stop and status say why
// rather than that no daemon runs. In root's own directory, links
// planted where the daemon's files go are not followed either.
func TestDaemonSessionDirAttack(t *testing.T) {
	perftest.Perf(t)
	needRoot(t, "the attack is on a daemon root runs, by another user")
	uid, gid := testUser(t)
	jitprof := buildJitprof(t, t.TempDir())

	rootDir := t.TempDir() // root's files the attacker aims at
	secret := filepath.Join(rootDir, "secret")
	const secretBody = "root's own file\n"
	if err := os.WriteFile(secret, []byte(secretBody), 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(rootDir, "dir")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	// The user's home for the attack: a directory of theirs under a
	// root directory they can enter.
	base, err := os.MkdirTemp("", "jitprof-sessiondir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	userDir := func(name string) string {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, gid); err != nil {
			t.Fatal(err)
		}
		return d
	}
	plant := func(to, at string) {
		if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(to, at); err != nil {
			t.Fatal(err)
		}
		os.Lchown(at, uid, gid)
	}
	daemon := func(args ...string) (string, error) {
		out, err := exec.Command(jitprof, append([]string{"daemon"}, args...)...).CombinedOutput()
		return string(out), err
	}
	untouched := func(what string) {
		t.Helper()
		if b, err := os.ReadFile(secret); err != nil || string(b) != secretBody {
			t.Errorf("%s: root's file now holds %q (%v)", what, b, err)
		}
		if ents, _ := os.ReadDir(target); len(ents) != 0 {
			t.Errorf("%s: root's directory now holds %d files", what, len(ents))
		}
	}

	logDir := userDir("log")
	plant(secret, filepath.Join(logDir, "daemon.log"))
	pidParent := userDir("pid")
	pidDir := filepath.Join(pidParent, "session") // root's, below the user's
	os.Mkdir(pidDir, 0o700)
	plant(secret, filepath.Join(pidDir, "jitprofd.pid"))
	curDir := userDir("current")
	plant(target, filepath.Join(curDir, "samples", "current"))
	for _, c := range []struct{ dir, why string }{
		{logDir, "owned by uid " + strconv.Itoa(uid)},
		{pidDir, "a directory above it is owned by uid " + strconv.Itoa(uid)},
		{curDir, "owned by uid " + strconv.Itoa(uid)},
	} {
		out, err := daemon("start", "-a", "--session-dir", c.dir)
		if err == nil {
			daemon("stop", "--session-dir", c.dir)
			t.Errorf("daemon start in %s: started", c.dir)
		} else if !strings.Contains(out, "refusing") || !strings.Contains(out, c.why) {
			t.Errorf("daemon start in %s: %v, want a refusal saying %q:\n%s", c.dir, err, c.why, out)
		}
		untouched("daemon start in " + c.dir)
		for _, op := range []string{"status", "stop", "dump"} {
			out, err := daemon(op, "--session-dir", c.dir)
			if err == nil || !strings.Contains(out, "refusing") || strings.Contains(out, "no daemon is running") {
				t.Errorf("daemon %s in %s: %v, want a refusal:\n%s", op, c.dir, err, out)
			}
		}
	}

	// Root's own directory: what is planted there (by root, or before
	// it was root's) is not followed: the log is refused, a pid file
	// that is a link is stale and replaced, not written through.
	own := filepath.Join(t.TempDir(), "own")
	os.Mkdir(own, 0o700)
	plant(secret, filepath.Join(own, "daemon.log"))
	if out, err := daemon("start", "-a", "--session-dir", own); err == nil {
		daemon("stop", "--session-dir", own)
		t.Errorf("daemon start with daemon.log a link: started")
	} else if !strings.Contains(out, "daemon.log") {
		t.Errorf("daemon start with daemon.log a link: %v\n%s", err, out)
	}
	untouched("daemon.log a link")
	os.Remove(filepath.Join(own, "daemon.log"))
	plant(secret, filepath.Join(own, "jitprofd.pid"))
	if out, err := daemon("start", "-a", "--session-dir", own); err != nil {
		log, _ := os.ReadFile(filepath.Join(own, "daemon.log"))
		t.Errorf("daemon start with a link for a pid file: %v\n%s\nlog:\n%s", err, out, log)
	} else {
		if fi, err := os.Lstat(filepath.Join(own, "jitprofd.pid")); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("the pid file: %v, %v; want a regular file made anew", fi, err)
		}
		if out, err := daemon("stop", "--session-dir", own); err != nil {
			t.Errorf("daemon stop: %v\n%s", err, out)
		}
	}
	untouched("jitprofd.pid a link")
}
