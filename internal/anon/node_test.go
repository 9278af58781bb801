package anon

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/jitdump"
	"github.com/jitprof/jitprof/internal/perfmap"
	"github.com/jitprof/jitprof/internal/perftest"
)

func TestNodePerfMap(t *testing.T) {
	script, pid := perftest.Node(t, "--perf-basic-prof")
	dir := filepath.Dir(script)
	f, err := os.Open("/tmp/perf-" + strconv.Itoa(pid) + ".map")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := perfmap.Options{Lenient: true}.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	r := claim(t, "perfmap", &Process{PID: pid, UID: os.Getuid(), Comm: "node"})
	checked := 0
	for _, s := range m.Symbols {
		if !strings.Contains(s.Name, "fib "+dir) || s.Size == 0 {
			continue
		}
		got, ok := r.Resolve(s.Start+s.Size/2, 0)
		// A name the map gives several addresses carries its address.
		at := fmt.Sprintf("%s [%#x]", s.Name, s.Start)
		if !ok || got.Name != s.Name && got.Name != at && !strings.Contains(strings.Join(got.Ambiguous, "\n"), s.Name) {
			t.Errorf("Resolve(%#x) = %+v, %v; want %q", s.Start+s.Size/2, got, ok, s.Name)
		}
		checked++
	}
	if checked == 0 {
		t.Fatalf("node wrote no fib to its perf map (%d symbols)", len(m.Symbols))
	}
}

func TestNodeJitdump(t *testing.T) {
	script, pid := perftest.Node(t, "--perf-prof", "--interpreted-frames-native-stack")
	dir := filepath.Dir(script)
	dump := filepath.Join(dir, "jit-"+strconv.Itoa(pid)+".dump")
	f, err := os.Open(dump)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jr, err := jitdump.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var fibs []jitdump.CodeLoad
	for jr.Next() {
		if l, ok := jr.Record().(*jitdump.CodeLoad); ok && strings.Contains(l.Name, "fib "+dir) {
			c := *l
			c.Code = nil
			fibs = append(fibs, c)
		}
	}
	if len(fibs) == 0 {
		t.Fatalf("node wrote no fib to %s (%v)", dump, jr.Err())
	}
	// Not at the place the handler looks by default: found through the
	// marker mapping only.
	p := &Process{PID: pid, UID: os.Getuid(), Comm: "node", Mappings: []Mapping{{Start: 0x10000, End: 0x11000, Path: dump, Exec: true}}}
	r := claim(t, "jitdump", p)
	for _, l := range fibs {
		got, ok := r.Resolve(l.CodeAddr+l.CodeSize/2, l.Timestamp)
		if !ok || got.Name != l.Name || got.Gen != l.CodeIndex {
			t.Errorf("Resolve(%#x, %d) = %+v, %v; want %q generation %d", l.CodeAddr, l.Timestamp, got, ok, l.Name, l.CodeIndex)
		}
	}
	t.Logf("%d fib loads, e.g. %q", len(fibs), fibs[0].Name)
}
