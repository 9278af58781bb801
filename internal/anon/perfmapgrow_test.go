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
	// probe names every address of interest as r and the whole map's
	// mapResolver do: by time, by generation 0 (a session's sample
	// files ask so), and its unwinding tables (none).
	probe := func(what string, r Resolver) {
		t.Helper()
		p := proc()
		whole, err := perfmapHandler{}.Claim(p)
		if err != nil {
			t.Fatal(err)
		}
		if pr, ok := whole.(*perfmapResolver); ok {
			whole = pr.layers[0] // as read at once: one layer
		}
		for a := uint64(0xff00); a < 0x10000+200*0x100; a += 0x40 {
			got, gok := r.Resolve(a, 1)
			want, wok := whole.Resolve(a, 1)
			if gok != wok || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: at %#x named %+v (%v), the whole map %+v (%v)", what, a, got, gok, want, wok)
			}
			got, gok = r.(SeqResolver).ResolveSeq(a, 0)
			want, wok = whole.(SeqResolver).ResolveSeq(a, 0)
			if gok != wok || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: generation 0 at %#x named %+v (%v), the whole map %+v (%v)", what, a, got, gok, want, wok)
			}
			_, _, gok = r.(Unwinder).UnwindTable(a, 1)
			_, _, wok = whole.(Unwinder).UnwindTable(a, 1)
			if gok != wok {
				t.Fatalf("%s: an unwinding table at %#x: %v, the whole map %v", what, a, gok, wok)
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
	// The same line twice names as once.
	write(os.O_APPEND, "1b000 80 JS:*twice\n1b000 80 JS:*twice\n")
	rt, readsT, ok := Extend(r2, reads2, p)
	if !ok {
		t.Fatal("a line written twice: read whole again")
	}
	probe("a line written twice", rt)
	r2, reads2 = rt, readsT
	if !reads2.Unchanged(p) || reads.Unchanged(p) {
		t.Error("the reads of the layered claim are not the map as it is now")
	}

	// Half a line: read whole (the whole map's reading takes it as it
	// is), and once it is whole, read whole again (its range is the
	// half's).
	write(os.O_APPEND, "16000 80 JS:*h")
	if _, _, ok := Extend(r2, reads2, p); ok {
		t.Fatal("half a line appended: extended")
	}
	r3, p3 := claim()
	probe("half a line, read whole", r3)
	write(os.O_APPEND, "1\n")
	if _, _, ok := Extend(r3, p3.Reads, p3); ok {
		t.Fatal("the half line ended: extended")
	}
	r4, p4 := claim()
	reads4 := p4.Reads
	p = p4
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
		write(os.O_TRUNC, string(data)) // the map as it was, written anew
		if _, _, ok := Extend(r4, reads4, p); ok {
			t.Errorf("%s: written anew at its size: extended", c.what)
		}
		r4, p = claim()
		reads4 = p.Reads
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

// FuzzPerfmapGrows: whatever is appended to a perf map, a layer made of
// it names every address probed as the whole map read at once does, or
// Extend says false.
func FuzzPerfmapGrows(f *testing.F) {
	f.Add("10000 80 a\n10100 80 b\n", "10200 80 c\n")
	f.Add("10000 80 a\n", "10040 80 c\n")
	f.Add("10000 80 a\n", "20000 80 a\n")
	f.Add("10000 80 a\n10000 80 a\n", "10080 10 d\n10090 4 e\n1008c 8 f\n")
	f.Add("10000 80 a\n", "ffffffffffffff00 100 w\n")
	f.Fuzz(func(t *testing.T, base, added string) {
		const pid = 4243
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "tmp"), 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(root, "tmp", fmt.Sprintf("perf-%d.map", pid))
		if err := os.WriteFile(path, []byte(base), 0o600); err != nil {
			t.Fatal(err)
		}
		claim := func() (Resolver, *Process) {
			p := &Process{PID: pid, NSPID: pid, Comm: "node", Root: root, UID: os.Getuid(), GID: os.Getgid(), Reads: &Reads{}}
			r, _, _ := Claim([]Handler{perfmapHandler{}}, p)
			return r, p
		}
		r, p := claim()
		if r == nil {
			return
		}
		fl, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		fl.WriteString(added)
		fl.Close()
		layered, _, ok := Extend(r, p.Reads, p)
		if !ok {
			return
		}
		whole, _ := claim()
		if whole == nil {
			t.Fatal("extended, but the whole map names nothing")
		}
		// Every bound of every line, and a byte either side.
		var addrs []uint64
		for _, text := range []string{base, added} {
			for _, line := range strings.Split(text, "\n") {
				var start, size uint64
				if n, _ := fmt.Sscanf(line, "%x %x", &start, &size); n == 2 {
					addrs = append(addrs, start-1, start, start+size/2, start+size-1, start+size)
				}
			}
		}
		for _, a := range addrs {
			got, gok := layered.Resolve(a, 1)
			want, wok := whole.Resolve(a, 1)
			if gok != wok || !reflect.DeepEqual(got, want) {
				t.Fatalf("at %#x the layers name %+v (%v), the whole map %+v (%v)", a, got, gok, want, wok)
			}
		}
	})
}
