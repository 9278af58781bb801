package symbolize

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedBinaries builds small real binaries for fuzz seeds and malformed-input
// tests, rather than committing binaries.
func seedBinaries(t testing.TB) [][]byte {
	dir := t.TempDir()
	var out [][]byte
	for i, flags := range [][]string{
		{"-Os", "-gdwarf-4", "testdata/lib.c", "-shared", "-fPIC"},
		{"-Os", "-g", "testdata/prog.c", "-fcf-protection=full", "-Wl,-z,ibtplt"},
		{"-O0", "-g0", "-s", "testdata/lib.c", "-shared", "-fPIC"},
	} {
		data, err := os.ReadFile(gcc(t, dir, fmt.Sprint("seed", i), flags...))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// exercise runs every lookup path over an image read from data; malformed
// input may fail, but must not panic.
func exercise(t testing.TB, data []byte) error {
	img, err := LoadReader("fuzz", bytes.NewReader(data), LoadOptions{})
	if err != nil {
		return err
	}
	for _, a := range []uint64{0, 0x1000, 0x1100, 0x401000, ^uint64(0)} {
		img.LookupAddr(a)
		img.LookupFileOffset(a)
		if _, err := img.Frames(a); err != nil {
			return err
		}
	}
	for _, e := range img.syms.(*table).entries[:min(len(img.syms.(*table).entries), 8)] {
		if _, err := img.Frames(e.start); err != nil {
			return err
		}
	}
	return nil
}

// smallBinaries builds the fuzz seeds: real binaries with DWARF, inlined
// code, an IBT PLT and none of these, linked without libc and page padding
// so that each is a few KB. The fuzzer mutates and minimises its seeds; the
// 15-20 KB binaries of seedBinaries made it spend its time on that.
func smallBinaries(t testing.TB) [][]byte {
	dir := t.TempDir()
	small := []string{"-nostdlib", "-fno-asynchronous-unwind-tables", "-fno-ident",
		"-Wl,-z,noseparate-code", "-Wl,-z,norelro", "-Wl,--hash-style=gnu"}
	var out [][]byte
	for i, flags := range [][]string{
		{"-Os", "-gdwarf-4", "testdata/lib.c", "-shared", "-fPIC"},
		{"-Os", "-g1", "testdata/prog.c", "-fcf-protection=full", "-Wl,-z,ibtplt", "-Wl,--unresolved-symbols=ignore-all", "-Wl,-e,main"},
		{"-O0", "-g0", "-s", "testdata/lib.c", "-shared", "-fPIC"},
	} {
		data, err := os.ReadFile(gcc(t, dir, fmt.Sprint("small", i), append(flags, small...)...))
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 6<<10 {
			t.Fatalf("fuzz seed %d is %d bytes; keep seeds to a few KB", i, len(data))
		}
		out = append(out, data)
	}
	return out
}

func FuzzLoadELF(f *testing.F) {
	for _, b := range smallBinaries(f) {
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		exercise(t, data)
	})
}

// TestMalformed truncates and corrupts real binaries: every result is an
// image or an error, and header damage is reported as ErrMalformed.
func TestMalformed(t *testing.T) {
	for _, bin := range seedBinaries(t) {
		for _, n := range []int{0, 4, 16, 63, 64, 200, len(bin) / 3, len(bin) - 1} {
			err := exercise(t, bin[:n])
			if n < 64 && !errors.Is(err, ErrMalformed) {
				t.Errorf("truncated to %d bytes: err = %v, want ErrMalformed", n, err)
			}
		}
		for off := 0; off < min(len(bin), 4096); off += 7 {
			bad := bytes.Clone(bin)
			bad[off] ^= 0xff
			exercise(t, bad)
		}
	}
}

func TestCatchNamesFile(t *testing.T) {
	err := func() (err error) {
		defer catch("/bin/crafted", &err)
		panic("index out of range")
	}()
	if !errors.Is(err, ErrMalformed) || err.Error() != "/bin/crafted: malformed ELF: index out of range" {
		t.Fatalf("err = %v", err)
	}
}

// TestMain fails the run if tests leak file descriptors: images must close
// the files they read.
func TestMain(m *testing.M) {
	// A pipe starts the runtime's poller, whose descriptors stay open;
	// open them before counting.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	before, _ := os.ReadDir("/proc/self/fd")
	code := m.Run()
	after, _ := os.ReadDir("/proc/self/fd")
	if code == 0 && before != nil && len(after) > len(before) {
		fmt.Fprintf(os.Stderr, "leaked %d file descriptors\n", len(after)-len(before))
		code = 1
	}
	os.Exit(code)
}

// TestDWARFEntryBudget: the fuzzer found units on which debug/dwarf's
// reader returns null entries forever; the entry budget must stop the walk.
func TestDWARFEntryBudget(t *testing.T) {
	bin := gcc(t, t.TempDir(), "prog", "testdata/prog.c")
	img, err := Load(bin, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, size, err := img.openDWARF()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := indexDWARF(bin, d, size); err != nil {
		t.Fatalf("full budget: %v", err)
	}
	if _, err := indexDWARF(bin, d, 3); !errors.Is(err, ErrMalformed) {
		t.Fatalf("budget of 3 entries: err = %v, want ErrMalformed", err)
	}
}

// TestTablesPastEnd: a header whose section or program header table lies
// past the end of the file is refused before debug/elf allocates the
// table's claimed size (the fuzzer spent milliseconds on each such input).
func TestTablesPastEnd(t *testing.T) {
	bin := smallBinaries(t)[2]
	for _, tc := range []struct {
		name string
		off  int // of the 16-bit count in the ELF64 header
		want string
	}{
		{"program headers", 0x38, "program headers"},
		{"section headers", 0x3c, "section headers"},
	} {
		bad := bytes.Clone(bin)
		bad[tc.off], bad[tc.off+1] = 0xfe, 0xff
		_, err := LoadReader("crafted", bytes.NewReader(bad), LoadOptions{})
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrMalformed naming the %s", tc.name, err, tc.want)
		}
		path := filepath.Join(t.TempDir(), "crafted")
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path, LoadOptions{}); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s from a file: err = %v, want ErrMalformed naming the %s", tc.name, err, tc.want)
		}
	}
	if _, err := LoadReader("good", bytes.NewReader(bin), LoadOptions{}); err != nil {
		t.Errorf("the good binary: %v", err)
	}
}
