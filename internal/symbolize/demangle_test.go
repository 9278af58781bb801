package symbolize

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDemangle(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"main", "main"},
		{"_start", "_start"},
		{"_Zbogus", "_Zbogus"},
		{"_R", "_R"},
		{"_ZN3foo3barEv", "foo::bar"},
		{"_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back"},
		{"_ZL4leafi.cold", "leaf"},
		{"_ZN4core3ptr13drop_in_place17h1234567890abcdefE", "core::ptr::drop_in_place"},
		{"_ZN3foo3bar17h0123456789abcdefE.llvm.12345", "foo::bar"},
		{"_RNvCs1234_7mycrate3foo", "mycrate::foo"},
		{"_RNvMs_Cs4Cv8Wi1oAIB_7mycrateNtB4_3Foo3bar", "<mycrate::Foo>::bar"},
	} {
		if got := Demangle(tc.in); got != tc.want {
			t.Errorf("Demangle(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestImageNames checks demangling and RawNames on an image's symbols,
// named in C through asm labels so no C++ or Rust compiler is needed.
func TestImageNames(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "names.c")
	code := `int cxx(int) __asm__("_ZN3foo3barEi");
int rust(int) __asm__("_ZN5krate4func17h0123456789abcdefE");
__attribute__((noinline)) int cxx(int x) { return x + 1; }
__attribute__((noinline)) int rust(int x) { return x * 2; }
int main(int argc, char **argv) { return cxx(argc) + rust(argc); }
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := gcc(t, dir, "names", src)
	syms := nmFuncs(t, bin)
	for _, tc := range []struct {
		raw        bool
		cxx, rustN string
	}{
		{false, "foo::bar", "krate::func"},
		{true, "_ZN3foo3barEi", "_ZN5krate4func17h0123456789abcdefE"},
	} {
		img, err := Load(bin, LoadOptions{RawNames: tc.raw})
		if err != nil {
			t.Fatal(err)
		}
		for raw, want := range map[string]string{"_ZN3foo3barEi": tc.cxx, "_ZN5krate4func17h0123456789abcdefE": tc.rustN} {
			if got, ok := img.LookupAddr(nmAddr(syms, raw)); !ok || got.Name != want {
				t.Errorf("raw=%v: LookupAddr(%s) = %+v, %v; want %q", tc.raw, raw, got, ok, want)
			}
		}
	}
}
