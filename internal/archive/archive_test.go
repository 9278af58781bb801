package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t testing.TB, m *Manifest, contents ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := NewWriter(&b, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range contents {
		if err := w.Add(strings.NewReader(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	m := &Manifest{Kind: KindRecording, Source: "/tmp/perf.data", Files: []File{
		{Name: RecordingName, Role: RoleRecording, Size: 5},
		{Name: RootName("/usr/bin/app"), Role: RoleImage, Path: "/usr/bin/app", BuildID: "abcd", Size: 3},
		{Name: RootName("/usr/lib/debug/.build-id/ab/cd.debug"), Role: RoleDebug, Size: 0},
		{Name: KallsymsName, Role: RoleKallsyms, Size: 4},
	}, Missing: []Missing{{Path: "/usr/lib/libgone.so", Why: "no such file"}}}
	data := write(t, m, "PERF!", "ELF", "", "ksym")
	dir := t.TempDir()
	got, err := Extract(bytes.NewReader(data), dir, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != Version || got.Source != m.Source || len(got.Files) != 4 || got.Missing[0] != m.Missing[0] {
		t.Errorf("manifest %+v", got)
	}
	for name, want := range map[string]string{"perf.data": "PERF!", "root/usr/bin/app": "ELF", "root/usr/lib/debug/.build-id/ab/cd.debug": "", "kallsyms": "ksym"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
	// The tar command reads it too.
	gz, _ := gzip.NewReader(bytes.NewReader(data))
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
	}
	if strings.Join(names, " ") != "jitprof-archive.json perf.data root/usr/bin/app root/usr/lib/debug/.build-id/ab/cd.debug kallsyms" {
		t.Errorf("entries %q", names)
	}
}

func TestWriterChecks(t *testing.T) {
	for _, name := range []string{"../x", "/etc/passwd", "root", "other/x", "root/../x", "perf.data/x", "root/a\x00b", "root//a"} {
		if _, err := NewWriter(io.Discard, &Manifest{Kind: KindRecording, Files: []File{{Name: name}}}); err == nil {
			t.Errorf("entry %q accepted", name)
		}
	}
	var b bytes.Buffer
	w, err := NewWriter(&b, &Manifest{Kind: KindRecording, Files: []File{{Name: RecordingName, Size: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(strings.NewReader("short")); err == nil {
		t.Error("an entry shorter than its size was written")
	}
}

// rawTar writes a gzip-compressed tar of the given headers and bodies,
// as a crafted archive would be.
func rawTar(t *testing.T, manifest string, entries ...tarEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	all := append([]tarEntry{{hdr: tar.Header{Typeflag: tar.TypeReg, Name: ManifestName, Size: int64(len(manifest)), Mode: 0o644}, body: manifest}}, entries...)
	for _, e := range all {
		if err := tw.WriteHeader(&e.hdr); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, e.body)
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}

type tarEntry struct {
	hdr  tar.Header
	body string
}

func reg(name, body string) tarEntry {
	return tarEntry{tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(body)), Mode: 0o644}, body}
}

// TestHostile: a crafted archive is refused before anything lands
// outside the directory or over a file.
func TestHostile(t *testing.T) {
	man := func(files string) string {
		return `{"version":1,"kind":"recording","source":"x","files":[` + files + `]}`
	}
	for _, c := range []struct {
		name string
		data func() []byte
	}{
		{"not gzip", func() []byte { return []byte("hello") }},
		{"no manifest", func() []byte { return rawTar(t, "")[:30] }},
		{"escape", func() []byte {
			return rawTar(t, man(`{"name":"../evil","role":"image","size":1}`), reg("../evil", "x"))
		}},
		{"absolute", func() []byte {
			return rawTar(t, man(`{"name":"/tmp/evil","role":"image","size":1}`), reg("/tmp/evil", "x"))
		}},
		{"unlisted", func() []byte { return rawTar(t, man(``), reg("root/x", "x")) }},
		{"symlink", func() []byte {
			return rawTar(t, man(`{"name":"root/x","role":"image","size":0}`), tarEntry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "root/x", Linkname: "/etc/passwd"}})
		}},
		{"hard link", func() []byte {
			return rawTar(t, man(`{"name":"root/x","role":"image","size":0}`), tarEntry{hdr: tar.Header{Typeflag: tar.TypeLink, Name: "root/x", Linkname: "/etc/passwd"}})
		}},
		{"wrong size", func() []byte {
			return rawTar(t, man(`{"name":"root/x","role":"image","size":1}`), reg("root/x", "xyz"))
		}},
		{"twice", func() []byte {
			return rawTar(t, man(`{"name":"root/x","role":"image","size":1}`), reg("root/x", "x"), reg("root/x", "y"))
		}},
		{"listed twice", func() []byte {
			return rawTar(t, man(`{"name":"root/x","role":"image","size":1},{"name":"root/x","role":"image","size":1}`), reg("root/x", "x"))
		}},
		{"missing entry", func() []byte { return rawTar(t, man(`{"name":"root/x","role":"image","size":1}`)) }},
		{"too big", func() []byte {
			return rawTar(t, man(`{"name":"root/x","role":"image","size":9000000000}`))
		}},
		{"file over dir", func() []byte {
			return rawTar(t, man(`{"name":"root/a","role":"image","size":1},{"name":"root/a/b","role":"image","size":1}`), reg("root/a", "x"), reg("root/a/b", "y"))
		}},
		{"unknown field", func() []byte { return rawTar(t, `{"version":1,"kind":"recording","evil":1,"files":[]}`) }},
		{"version", func() []byte { return rawTar(t, `{"version":2,"kind":"recording","files":[]}`) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "x")
			os.Mkdir(dir, 0o700)
			_, err := Extract(bytes.NewReader(c.data()), dir, DefaultLimits)
			if !errors.Is(err, ErrFormat) && !errors.Is(err, os.ErrExist) && err == nil {
				t.Errorf("accepted")
			}
			if err == nil {
				t.Errorf("accepted")
			}
			// Nothing beside the directory.
			if es, _ := os.ReadDir(parent); len(es) != 1 {
				t.Errorf("wrote beside the directory: %v", es)
			}
		})
	}
}

// FuzzRead: any bytes read as an archive give, entry by entry, only
// names an extraction can take (ValidName: relative, no "..", under the
// archive's names), each listed by the manifest once, of the size it
// says, within the limits; or an error. Extract writes nothing but what
// the Reader returns, through an os.Root (TestHostile); the fuzzer reads
// without writing, so that it runs thousands of inputs a second.
func FuzzRead(f *testing.F) {
	f.Add(write(f, &Manifest{Kind: KindRecording, Files: []File{{Name: RecordingName, Role: RoleRecording, Size: 3}, {Name: "root/a/b", Role: RoleImage, Size: 2}}}, "abc", "de"))
	f.Add(write(f, &Manifest{Kind: KindSession, Files: []File{{Name: "session/s/x", Role: RoleSession, Size: 1}}}, "x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := Limits{Entries: 64, FileSize: 1 << 20, Total: 4 << 20}
		r, err := NewReader(bytes.NewReader(data), lim)
		if err != nil {
			return
		}
		listed := map[string]int64{}
		for _, f := range r.Manifest().Files {
			listed[f.Name] = f.Size
		}
		seen := map[string]bool{}
		var total int64
		for {
			f, body, err := r.Next()
			if err != nil {
				if err == io.EOF && len(seen) != len(listed) {
					t.Fatalf("EOF after %d of %d listed entries", len(seen), len(listed))
				}
				return
			}
			n, err := io.Copy(io.Discard, body)
			if !ValidName(f.Name) || seen[f.Name] || listed[f.Name] != f.Size || err == nil && n != f.Size {
				t.Fatalf("entry %q: valid %v, seen %v, %d bytes read of %d listed as %d", f.Name, ValidName(f.Name), seen[f.Name], n, f.Size, listed[f.Name])
			}
			seen[f.Name] = true
			if total += n; total > lim.Total {
				t.Fatalf("%d bytes read, over the limit", total)
			}
		}
	})
}
