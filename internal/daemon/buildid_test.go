package daemon

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/trust"
)

// TestBuildIDByRound: the push reads an executable's build-id once, and
// stats the file once a round whatever the number of its processes: a
// file replaced within a round keeps its old build-id for that round,
// and the next round reads the new one.
func TestBuildIDByRound(t *testing.T) {
	a, b := "/bin/true", "/bin/false"
	idA, _ := symbolize.FileBuildID(a, trust.Unknown)
	idB, _ := symbolize.FileBuildID(b, trust.Unknown)
	if idA == "" || idB == "" || idA == idB {
		t.Skipf("needs two executables with build-ids of their own: %s %q, %s %q", a, idA, b, idB)
	}
	exe := filepath.Join(t.TempDir(), "exe")
	put := func(from string) {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		// A new file renamed over the old one: another inode, as a
		// build or a package upgrade replaces an executable.
		if err := os.WriteFile(exe+".new", data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(exe+".new", exe); err != nil {
			t.Fatal(err)
		}
	}
	p := &pusher{buildIDs: map[string]cachedBuildID{}, rounds: 1}
	put(a)
	if got := p.buildID(exe); got != idA {
		t.Fatalf("build-id %q, want %s's %q", got, a, idA)
	}
	put(b)
	if got := p.buildID(exe); got != idA {
		t.Errorf("in the same round, after the file was replaced: %q, want the round's %q (no stat)", got, idA)
	}
	p.rounds++
	if got := p.buildID(exe); got != idB {
		t.Errorf("in the next round: %q, want the new file's %q", got, idB)
	}
	p.rounds++
	if got := p.buildID(exe); got != idB {
		t.Errorf("a round later, the file unchanged: %q, want %q", got, idB)
	}
}
