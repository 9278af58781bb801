package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCreatePerfMap: a perf map is a new file; an earlier process's map
// of this user at the same path (a reused pid) is replaced, and a
// symbolic link or another user's file there is refused and left alone.
func TestCreatePerfMap(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	check := func(path string, wantErr bool, wantContent string, target string) {
		t.Helper()
		f, err := createPerfMap(path)
		if (err != nil) != wantErr {
			t.Fatalf("createPerfMap(%s): error %v, want an error: %v", path, err, wantErr)
		}
		if err == nil {
			if _, err := f.WriteString("1000 10 fresh\n"); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		if b, err := os.ReadFile(target); err != nil || string(b) != wantContent {
			t.Errorf("after createPerfMap(%s), %s holds %q (%v), want %q", path, target, b, err, wantContent)
		}
	}

	fresh := filepath.Join(dir, "perf-1.map")
	check(fresh, false, "1000 10 fresh\n", fresh)

	stale := write("perf-2.map", "2000 10 stale_of_an_earlier_process\n")
	check(stale, false, "1000 10 fresh\n", stale)

	victim := write("victim", "not a map\n")
	link := filepath.Join(dir, "perf-3.map")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	check(link, true, "not a map\n", victim)

	if os.Geteuid() != 0 {
		t.Log("not root: another user's file cannot be made here, so that case is not tried")
		return
	}
	theirs := write("perf-4.map", "4000 10 theirs\n")
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	check(theirs, true, "4000 10 theirs\n", theirs)
}
