package symbolize

import (
	"debug/elf"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestAliasChoice(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cands []candidate
		want  string
	}{
		{"global beats weak and local", []candidate{
			{name: "w", bind: elf.STB_WEAK}, {name: "g_long", bind: elf.STB_GLOBAL}, {name: "l", bind: elf.STB_LOCAL}}, "g_long"},
		{"fewer underscores", []candidate{
			{name: "__libc_malloc", bind: elf.STB_GLOBAL}, {name: "malloc", bind: elf.STB_GLOBAL}}, "malloc"},
		{"shorter", []candidate{
			{name: "memcpy_impl", bind: elf.STB_GLOBAL}, {name: "memcpy", bind: elf.STB_GLOBAL}}, "memcpy"},
		{"bytewise order", []candidate{
			{name: "b", bind: elf.STB_WEAK}, {name: "a", bind: elf.STB_WEAK}}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for rot := range tc.cands {
				// Every input order must give the same name.
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
}

func TestSizelessSymbols(t *testing.T) {
	tab := newTable([]candidate{
		{name: "sized", start: 0x100, size: 0x10, limit: 0x400},
		{name: "asm1", start: 0x200, limit: 0x400},
		{name: "asm2", start: 0x300, limit: 0x380},
		{name: "last", start: 0x500},
	}, true)
	for _, tc := range []struct {
		addr uint64
		want string
	}{
		{0x10f, "sized"}, {0x110, ""}, {0x2ff, "asm1"}, {0x37f, "asm2"}, {0x380, ""}, {0x500, ""}, {0xff, ""},
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
	for _, e := range img.syms.entries {
		name := img.syms.names[e.name]
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
