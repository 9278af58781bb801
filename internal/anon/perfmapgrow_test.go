package anon

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestPerfmapGrows: a perf map appended to is named, layer on layer, as
// the whole map read at once names it, at every address; and read whole
// again (Extend says false) where a layer alone would name otherwise or
// the map was written anew.
func TestPerfmapGrows(t *testing.T) {
	const pid = 4242
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "tmp", fmt.Sprintf("perf-%d.map", pid))
	proc := func() *Process {
		return &Process{PID: pid, NSPID: pid, Comm: "node", Root: root, UID: os.Getuid(), GID: os.Getgid(), Reads: &Reads{}}
	}
	write := func(flag int, text string) {
		f, err := os.OpenFile(path, flag|os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	lines := func(from, n int, name string) string {
		s := ""
		for i := from; i < from+n; i++ {
			s += fmt.Sprintf("%x %x %s%d\n", 0x10000+i*0x100, 0x80, name, i)
		}
		return s
	}
	claim := func() (Resolver, *Process) {
		p := proc()
		r, h, errs := Claim(Builtins(), p)
		if r == nil || h.Name() != "perfmap" {
			t.Fatalf("no perfmap claim: %v", errs)
		}
		return r, p
	}
	// probe names every address of interest as r and a claim of the
	// whole map now do.
	probe := func(what string, r Resolver) {
		t.Helper()
		whole, _ := claim()
		for a := uint64(0xff00); a < 0x10000+200*0x100; a += 0x40 {
			got, gok := r.Resolve(a, 1)
			want, wok := whole.Resolve(a, 1)
			if gok != wok || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: at %#x named %+v (%v), the whole map %+v (%v)", what, a, got, gok, want, wok)
			}
		}
	}

	write(os.O_TRUNC, lines(0, 50, "JS:~f")+"10 0 zero size\n")
	r, p := claim()
	reads := p.Reads
	if _, ok := r.(*perfmapResolver); !ok {
		t.Fatalf("the claim of a perf map file is a %T", r)
	}
	probe("as read", r)

	// Appended: new code, new names.
	write(os.O_APPEND, lines(50, 10, "JS:*g"))
	r2, reads2, ok := Extend(r, reads, p)
	if !ok {
		t.Fatal("new code appended: read whole again")
	}
	if len(r2.(*perfmapResolver).layers) != 2 {
		t.Errorf("%d layers, want 2", len(r2.(*perfmapResolver).layers))
	}
	probe("a layer appended", r2)
	if !reads2.Unchanged(p) || reads.Unchanged(p) {
		t.Error("the reads of the layered claim are not the map as it is now")
	}

	// Half a line: nothing new named, until it is whole.
	write(os.O_APPEND, "16000 80 JS:*h")
	r3, reads3, ok := Extend(r2, reads2, p)
	if !ok || r3 != r2 {
		t.Fatal("half a line appended: not the same names")
	}
	write(os.O_APPEND, "1\n")
	r4, reads4, ok := Extend(r3, reads3, p)
	if !ok {
		t.Fatal("a line completed: read whole again")
	}
	probe("a line completed", r4)

	// What a layer alone would name otherwise: read whole.
	for _, c := range []struct{ what, line string }{
		{"code over named code", "10040 80 JS:*other\n"},
		{"a name met before, elsewhere", "20000 80 JS:~f3\n"},
		{"a name at two addresses", "21000 80 JS:*k\n22000 80 JS:*k\n"},
		{"two new ranges over each other", "23000 80 JS:*m\n23040 80 JS:*n\n"},
		{"a bad line", "zz 80 JS:*bad\n"},
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		write(os.O_APPEND, c.line)
		if _, _, ok := Extend(r4, reads4, p); ok {
			t.Errorf("%s: extended", c.what)
		}
		write(os.O_TRUNC, string(data))
		_, reads4, _ = Extend(r4, reads4, p) // the map as it was: the same names
	}

	// Written anew: its last line read renamed, a line after it. Read
	// whole, though what follows alone would add a layer.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	renamed := strings.Replace(string(data), "JS:*h1\n", "JS:*H1\n", 1)
	if renamed == string(data) {
		t.Fatal("no line to rename")
	}
	write(os.O_TRUNC, renamed+"30000 80 JS:*after\n")
	if _, _, ok := Extend(r4, reads4, p); ok {
		t.Error("a map written anew: extended")
	}
	write(os.O_TRUNC, lines(0, 70, "JS:~q"))
	if _, _, ok := Extend(r4, reads4, p); ok {
		t.Error("a map written anew, longer: extended")
	}

	// At most maxLayers layers.
	write(os.O_TRUNC, lines(0, 10, "a"))
	r, p = claim()
	reads = p.Reads
	for i := 1; ; i++ {
		write(os.O_APPEND, lines(10*i, 10, fmt.Sprintf("l%d_", i)))
		var ok bool
		if r, reads, ok = Extend(r, reads, p); !ok {
			if i != maxLayers {
				t.Errorf("read whole again at layer %d, want %d", i+1, maxLayers+1)
			}
			break
		}
		if i > maxLayers {
			t.Fatal("more than maxLayers layers")
		}
	}
}
