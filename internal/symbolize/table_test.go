package symbolize

import (
	"debug/elf"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestAliasChoice checks perf's choose_best_symbol order on the aliases
// where perf's names differ from the obvious choice.
func TestAliasChoice(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cands []candidate
		want  string
	}{
		{"local beats weak", []candidate{
			{name: "readdir", bind: elf.STB_WEAK}, {name: "__GI___readdir64", bind: elf.STB_LOCAL}}, "__GI___readdir64"},
		{"global beats local", []candidate{
			{name: "l_long_name", bind: elf.STB_LOCAL}, {name: "g", bind: elf.STB_GLOBAL}}, "g"},
		{"fewer underscores", []candidate{
			{name: "__libc_malloc", bind: elf.STB_GLOBAL}, {name: "malloc", bind: elf.STB_GLOBAL}}, "malloc"},
		{"longer", []candidate{
			{name: "mmap", bind: elf.STB_LOCAL}, {name: "mmap64", bind: elf.STB_LOCAL}}, "mmap64"},
		{"longer, versioned", []candidate{
			{name: "free", bind: elf.STB_WEAK}, {name: "cfree@GLIBC_2.2.5", bind: elf.STB_WEAK}}, "cfree@GLIBC_2.2.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for rot := range tc.cands {
				// Unless the rules tie, input order does not matter.
				cands := append(append([]candidate{}, tc.cands[rot:]...), tc.cands[:rot]...)
				for i := range cands {
					cands[i].start, cands[i].size = 0x1000, 0x10
				}
				got, ok := newTable(cands, true).lookup(0x1008)
				if !ok || got.Name != tc.want || got.Size != 0x10 {
					t.Errorf("order %d: %+v, %v; want %s", rot, got, ok, tc.want)
				}
			}
		})
	}
	// A tie keeps the first in the symbol table.
	if got, _ := newTable([]candidate{{name: "b", start: 1, size: 1}, {name: "a", start: 1, size: 1}}, true).lookup(1); got.Name != "b" {
		t.Errorf("tie: %q, want the first, b", got.Name)
	}
}

// TestSizelessSymbols checks that a symbol without a size runs to the
// next symbol (or its kallsyms limit), as perf's symbols__fixup_end: of
// aliases only the last gets the range, and so is the one kept (kallsyms'
// memcpy, __memcpy, __pi_memcpy: perf names it __pi_memcpy).
func TestSizelessSymbols(t *testing.T) {
	tab := newTable([]candidate{
		{name: "sized", start: 0x100, size: 0x10},
		{name: "_dl_start_user", start: 0x200},
		{name: "kasm", start: 0x300, limit: 0x380},
		{name: "memcpy", start: 0x400, bind: elf.STB_GLOBAL},
		{name: "__memcpy", start: 0x400, bind: elf.STB_GLOBAL},
		{name: "__pi_memcpy", start: 0x400, bind: elf.STB_GLOBAL},
		{name: "_init", start: 0x480, limit: 0x490, open: true},
		{name: "memset@plt", start: 0x4a0, size: 0x10},
		{name: "last", start: 0x500},
	}, true)
	for _, tc := range []struct {
		addr uint64
		want string
	}{
		{0x10f, "sized"}, {0x110, ""}, {0x2ff, "_dl_start_user"}, {0x37f, "kasm"}, {0x380, ""},
		{0x47f, "__pi_memcpy"}, {0x48f, "_init"}, {0x49f, "_init"}, {0x4a0, "memset@plt"}, {0x4b0, ""}, {0x500, ""}, {0xff, ""},
	} {
		got, _ := tab.lookup(tc.addr)
		if got.Name != tc.want {
			t.Errorf("lookup(%#x) = %q, want %q", tc.addr, got.Name, tc.want)
		}
	}
}

// TestSymbolAliasesInBinary checks alias choice on aliases gcc emits.
func TestSymbolAliasesInBinary(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "alias.c")
	code := `int impl(int x) { return x * 7; }
int __impl_internal(int) __attribute__((alias("impl")));
int weak_impl(int) __attribute__((weak, alias("impl")));
static int local_impl(int) __attribute__((alias("impl"), used));
int main(int argc, char **argv) { return impl(argc); }
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := gcc(t, dir, "alias", src)
	img, err := Load(bin, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr := nmAddr(nmFuncs(t, bin), "__impl_internal")
	if got, ok := img.LookupAddr(addr); !ok || got.Name != "impl" {
		t.Errorf("LookupAddr(impl) = %+v, %v; want impl", got, ok)
	}
}

func TestVDSO(t *testing.T) {
	s := New(Options{})
	img, err := s.Open(VDSOPath, "")
	if err != nil {
		t.Fatal(err)
	}
	if img.NumSymbols() == 0 {
		t.Fatal("no vDSO symbols")
	}
	// The vDSO is mapped at pgoff 0 and linked at 0, so file offsets and
	// addresses coincide; every symbol must resolve by either.
	found := false
	for _, e := range img.syms.(*table).entries {
		name := img.syms.(*table).names[e.name]
		byOff, ok1 := img.LookupFileOffset(e.start)
		byAddr, ok2 := img.LookupAddr(e.start)
		if !ok1 || !ok2 || byOff.Name != name || byAddr.Name != name {
			t.Errorf("%s at %#x: by offset %+v, by address %+v", name, e.start, byOff, byAddr)
		}
		found = found || name == "clock_gettime" || name == "__vdso_clock_gettime"
	}
	if !found {
		t.Error("no clock_gettime in the vDSO")
	}
	if again, _ := s.Open(VDSOPath, ""); again != img {
		t.Error("vDSO loaded twice")
	}
}

func TestConcurrentOpen(t *testing.T) {
	bin := gcc(t, t.TempDir(), "prog", "testdata/prog.c")
	leaf := nmAddr(nmFuncs(t, bin), "leaf")
	s := New(Options{DebugDirs: []string{}, BuildIDCaches: []string{}})
	imgs := make([]*Image, 2)
	var wg sync.WaitGroup
	for i := range imgs {
		wg.Go(func() {
			img, err := s.Open(bin, "")
			if err != nil {
				t.Error(err)
				return
			}
			for range 100 {
				if sym, ok := img.LookupAddr(leaf); !ok || sym.Name != "leaf" {
					t.Errorf("LookupAddr(leaf) = %+v, %v", sym, ok)
				}
				if f, err := img.Frames(leaf); err != nil || len(f) == 0 {
					t.Errorf("Frames(leaf) = %v, %v", f, err)
				}
			}
			imgs[i] = img
		})
	}
	wg.Wait()
	if imgs[0] != imgs[1] {
		t.Error("two goroutines loaded two images for one (path, build-id)")
	}
}
