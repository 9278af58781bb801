package symbolize

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

// readelfBuildID reads the build-id with readelf, independently of our parser.
func readelfBuildID(t *testing.T, bin string) string {
	t.Helper()
	m := regexp.MustCompile(`Build ID: ([0-9a-f]+)`).FindStringSubmatch(run(t, "readelf", "-n", bin))
	if m == nil {
		t.Fatalf("readelf -n %s: no build-id", bin)
	}
	return m[1]
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// wantStatics checks that the static functions of prog.c resolve at the
// addresses nm gave before stripping.
func wantStatics(t *testing.T, img *Image, ref []nmSym) {
	t.Helper()
	for _, fn := range []string{"leaf", "compute"} {
		addr := nmAddr(ref, fn)
		if got, ok := img.LookupAddr(addr + 1); !ok || got.Name != fn || got.Start != addr {
			t.Errorf("LookupAddr(%s+1 = %#x) = %+v, %v", fn, addr+1, got, ok)
		}
	}
}

// TestMiniDebugInfo builds .gnu_debugdata the way Fedora's find-debuginfo
// does (add_minidebug): keep the function symbols that .dynsym lacks, in an
// xz-compressed debug-only ELF, inside the stripped binary.
func TestMiniDebugInfo(t *testing.T) {
	perftest.Need(t, "xz")
	dir := t.TempDir()
	bin := gcc(t, dir, "prog", "testdata/prog.c")
	ref := nmFuncs(t, bin)

	dynamic := map[string]bool{}
	for line := range strings.Lines(run(t, "nm", "-D", "--format=posix", "--defined-only", bin)) {
		dynamic[strings.Fields(line)[0]] = true
	}
	var keep []string
	for line := range strings.Lines(run(t, "nm", "--format=posix", "--defined-only", bin)) {
		f := strings.Fields(line)
		if (f[1] == "T" || f[1] == "t" || f[1] == "D") && !dynamic[f[0]] {
			keep = append(keep, f[0])
		}
	}
	slices.Sort(keep)
	keepFile := filepath.Join(dir, "keep_symbols")
	if err := os.WriteFile(keepFile, []byte(strings.Join(keep, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	debuginfo, mini := filepath.Join(dir, "debuginfo"), filepath.Join(dir, "mini_debuginfo")
	run(t, "objcopy", "--only-keep-debug", bin, debuginfo)
	run(t, "objcopy", "-S", "--remove-section", ".gdb_index", "--remove-section", ".comment", "--keep-symbols="+keepFile, debuginfo, mini)
	run(t, "xz", "-9", mini)
	run(t, "strip", "--strip-all", bin)

	stripped, err := Load(bin, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stripped.LookupAddr(nmAddr(ref, "leaf")); ok {
		t.Fatal("static function found in a stripped binary: the test proves nothing")
	}
	// A report says where the missing symbols would be.
	if id := stripped.BuildID(); id == "" || !strings.Contains(stripped.Stripped(), "/usr/lib/debug/.build-id/"+id[:2]+"/"+id[2:]+".debug is not installed") {
		t.Errorf("stripped binary (build-id %q): Stripped() = %q", id, stripped.Stripped())
	}

	run(t, "objcopy", "--add-section", ".gnu_debugdata="+mini+".xz", bin)
	if strings.Contains(run(t, "readelf", "-S", bin), ".symtab") {
		t.Fatal("binary still has .symtab")
	}
	img, err := Load(bin, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantStatics(t, img, ref)
	if img.Stripped() != "" {
		t.Errorf("with MiniDebugInfo: Stripped() = %q, want none", img.Stripped())
	}
	if got, ok := img.LookupAddr(nmAddr(ref, "main")); !ok || got.Name != "main" {
		t.Errorf("main from .dynsym/.gnu_debugdata: %+v, %v", got, ok)
	}
}

func TestDebugFileByBuildID(t *testing.T) {
	root := t.TempDir()
	bin := gcc(t, t.TempDir(), "prog", "testdata/prog.c")
	ref := nmFuncs(t, bin)
	id := readelfBuildID(t, bin)
	installed := filepath.Join(root, "usr/bin/prog")
	copyFile(t, bin, installed)
	debug := filepath.Join(root, "usr/lib/debug/.build-id", id[:2], id[2:]+".debug")
	copyFile(t, bin, debug)
	run(t, "objcopy", "--only-keep-debug", bin, debug)
	run(t, "strip", "--strip-all", installed)

	s := New(Options{Root: root, BuildIDCaches: []string{}})
	img, err := s.Open("/usr/bin/prog", id)
	if err != nil {
		t.Fatal(err)
	}
	if img.BuildID() != id || img.DebugPath() != debug {
		t.Errorf("BuildID, DebugPath = %s, %s; want %s, %s", img.BuildID(), img.DebugPath(), id, debug)
	}
	wantStatics(t, img, ref)
	frames, err := img.Frames(nmAddr(ref, "leaf"))
	if err != nil || len(frames) == 0 || filepath.Base(frames[0].File) != "prog.c" || frames[0].Line == 0 {
		t.Errorf("Frames(leaf) from the debug file = %v, %v", frames, err)
	}
	if again, _ := s.Open("/usr/bin/prog", id); again != img {
		t.Error("second Open loaded the image again")
	}
}

func TestBuildIDMismatch(t *testing.T) {
	dir := t.TempDir()
	recorded := gcc(t, dir, "recorded", "testdata/prog.c")
	ref := nmFuncs(t, recorded)
	id := readelfBuildID(t, recorded)
	addrs, maps := runMaps(t, recorded)
	leafOff := fileOffset(t, maps, recorded, addrs["leaf"])
	// The file at the recorded path was rebuilt since the recording.
	path := gcc(t, dir, "prog", "-O1", "-DWITH_CHANGE", "testdata/prog.c")
	if readelfBuildID(t, path) == id {
		t.Fatal("rebuild kept the build-id")
	}

	none := New(Options{DebugDirs: []string{}, BuildIDCaches: []string{}})
	_, err := none.Open(path, id)
	if !errors.Is(err, ErrBuildIDMismatch) || !strings.Contains(err.Error(), id) {
		t.Fatalf("Open of a rebuilt binary: err = %v, want ErrBuildIDMismatch naming %s", err, id)
	}
	if _, err := none.Open(filepath.Join(dir, "gone"), id); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing file: err = %v, want not-exist", err)
	}

	for _, tc := range []struct {
		name  string
		place func(t *testing.T, base string) string // returns the copy's path
		opts  func(base string) Options
	}{
		{"perf cache by build-id", func(t *testing.T, base string) string {
			p := filepath.Join(base, ".build-id", id[:2], id[2:], "elf")
			copyFile(t, recorded, p)
			return p
		}, func(base string) Options { return Options{DebugDirs: []string{}, BuildIDCaches: []string{base}} }},
		{"perf cache by path", func(t *testing.T, base string) string {
			p := filepath.Join(base, path, id, "elf")
			copyFile(t, recorded, p)
			return p
		}, func(base string) Options { return Options{DebugDirs: []string{}, BuildIDCaches: []string{base}} }},
		{"debug-only file", func(t *testing.T, base string) string {
			p := filepath.Join(base, ".build-id", id[:2], id[2:]+".debug")
			copyFile(t, recorded, p)
			run(t, "objcopy", "--only-keep-debug", recorded, p)
			return p
		}, func(base string) Options { return Options{DebugDirs: []string{base}, BuildIDCaches: []string{}} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			want := tc.place(t, base)
			img, err := New(tc.opts(base)).Open(path, id)
			if err != nil {
				t.Fatal(err)
			}
			if img.Path() != want {
				t.Errorf("Path = %s, want %s", img.Path(), want)
			}
			wantStatics(t, img, ref)
			if got, ok := img.LookupFileOffset(leafOff); !ok || got.Name != "leaf" {
				t.Errorf("LookupFileOffset(leaf) = %+v, %v", got, ok)
			}
		})
	}
}

func TestDebugLink(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt bool
	}{
		{"crc ok", false},
		{"crc mismatch", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := gcc(t, dir, "prog", "testdata/prog.c")
			ref := nmFuncs(t, bin)
			debug := filepath.Join(dir, "prog.debug")
			run(t, "objcopy", "--only-keep-debug", bin, debug)
			run(t, "strip", "--strip-all", "--remove-section=.note.gnu.build-id", bin)
			cmd := run // objcopy computes the CRC from the file it links to
			cmd(t, "objcopy", "--add-gnu-debuglink="+debug, bin)
			moved := filepath.Join(dir, ".debug", "prog.debug")
			copyFile(t, debug, moved)
			if err := os.Remove(debug); err != nil {
				t.Fatal(err)
			}
			if tc.corrupt {
				f, err := os.OpenFile(moved, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.Write([]byte{0})
				f.Close()
			}
			img, err := Load(bin, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.corrupt {
				if img.DebugPath() != "" {
					t.Errorf("debug file with a wrong CRC was used: %s", img.DebugPath())
				}
				return
			}
			if img.DebugPath() != moved {
				t.Errorf("DebugPath = %q, want %q", img.DebugPath(), moved)
			}
			wantStatics(t, img, ref)
		})
	}
}

// TestGuessOffsets checks the rebuilt layout of debug-only files against the
// binaries they came from.
func TestGuessOffsets(t *testing.T) {
	dir := t.TempDir()
	for _, bin := range []string{
		gcc(t, dir, "pie", "-fPIE", "-pie", "testdata/prog.c"),
		gcc(t, dir, "no-pie", "-fno-PIE", "-no-pie", "testdata/prog.c"),
		gcc(t, dir, "lib.so", "-shared", "-fPIC", "testdata/lib.c"),
		libc,
	} {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			if _, err := os.Stat(bin); err != nil {
				t.Skipf("no %s: %v", bin, err)
			}
			debug := filepath.Join(t.TempDir(), "debug")
			run(t, "objcopy", "--only-keep-debug", bin, debug)
			orig, err := Load(bin, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			img, err := Load(debug, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(img.loads) != len(orig.loads) || len(orig.loads) < 2 {
				t.Fatalf("segments: %d from the debug file, %d from the binary", len(img.loads), len(orig.loads))
			}
			for i, s := range orig.loads {
				if g := img.loads[i]; g.off != s.off || g.vaddr != s.vaddr {
					t.Errorf("segment %d: guessed offset %#x vaddr %#x; binary has %#x %#x", i, g.off, g.vaddr, s.off, s.vaddr)
				}
			}
		})
	}
}
