package anon

import "testing"

// TestTimelineKey: the built-in handlers say what they read of a
// process's timeline, an external handler does not; the key changes
// with what a claim reads (the name, jitdump's markers, a PyPy
// process's JIT memory) and not with the rest.
func TestTimelineKey(t *testing.T) {
	if !ReadsTimelineKnown(Builtins()) {
		t.Error("the built-in handlers do not say what they read")
	}
	if ReadsTimelineKnown(append(Builtins(), &external{name: "x"})) {
		t.Error("an external handler says what it reads")
	}
	key := func(p Process) string {
		k, ok := TimelineKey(Builtins(), &p)
		if !ok {
			t.Fatal("no key")
		}
		return k
	}
	jit := Mapping{Start: 0x1000, End: 0x2000, Path: "//anon", Anon: true, Exec: true}
	data := Mapping{Start: 0x3000, End: 0x4000, Path: "//anon", Anon: true}
	lib := Mapping{Start: 0x5000, End: 0x6000, Path: "/usr/lib/libz.so", Exec: true}
	marker := Mapping{Start: 0x7000, End: 0x8000, Path: "/tmp/jit-1.dump", Exec: true}
	node := Process{PID: 1, Comm: "node", Mappings: []Mapping{jit}}
	pypy := Process{PID: 1, Comm: "pypy3", Mappings: []Mapping{jit}}
	with := func(p Process, ms ...Mapping) Process {
		p.Mappings = append(append([]Mapping(nil), p.Mappings...), ms...)
		return p
	}
	renamed := node
	renamed.Comm = "node2"
	for _, c := range []struct {
		name string
		a, b Process
		same bool
	}{
		{"data", node, with(node, data), true},
		{"a library", node, with(node, lib), true},
		{"JIT memory, not PyPy", node, with(node, jit), true},
		{"renamed", node, renamed, false},
		{"a marker", node, with(node, marker), false},
		{"JIT memory of PyPy", pypy, with(pypy, Mapping{Start: 0x9000, End: 0xa000, Path: "//anon", Anon: true, Exec: true}), false},
		{"libpypy mapped", node, with(node, Mapping{Start: 0x9000, End: 0xa000, Path: "/usr/lib/libpypy3.9-c.so", Exec: true}), false},
	} {
		if got := key(c.a) == key(c.b); got != c.same {
			t.Errorf("%s: same key %v, want %v", c.name, got, c.same)
		}
	}
}
