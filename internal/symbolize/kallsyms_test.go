package symbolize

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/golden"
)

// TestKallsymsGolden looks up addresses at, inside and between symbols; the
// expected text is in testdata/kallsyms.golden (rewrite with -update).
func TestKallsymsGolden(t *testing.T) {
	k, err := LoadKallsyms("testdata/kallsyms.txt", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, addr := range []uint64{
		0xffffffff80ffffff, // before the kernel
		0xffffffff81000000, // three aliases
		0xffffffff8100003f,
		0xffffffff81000040,
		0xffffffff81001010, // weak
		0xffffffff81002000, // data symbol: ends the text before it
		0xffffffff81002400,
		0xffffffffc0000010, // module
		0xffffffffc0000fff,
		0xffffffffc0001fff, // last symbol: bounded by its page
		0xffffffffc0002000,
	} {
		s, ok := k.Lookup(addr)
		if !ok {
			fmt.Fprintf(&out, "%#x -\n", addr)
			continue
		}
		fmt.Fprintf(&out, "%#x %s+%#x [%s] size %#x\n", addr, s.Name, addr-s.Start, s.Module, s.Size)
	}
	golden.Check(t, "testdata/kallsyms.golden", out.Bytes())
}

func TestKallsymsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     error
		substr   string
	}{
		{"restricted", mustRead(t, "testdata/kallsyms-restricted.txt"), ErrKptrRestrict, "kptr_restrict"},
		{"short line", "ffffffff81000000 T\n", nil, "line 1"},
		{"bad address", "ffffffff8100000g T x\n", nil, "line 1: address"},
		{"bad type", "ffffffff81000000 TT x\n", nil, "line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseKallsyms(strings.NewReader(tc.in), LoadOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.substr) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err = %v; want %v containing %q", err, tc.want, tc.substr)
			}
		})
	}
}

func mustRead(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLiveKallsyms checks the running kernel's table when it is visible.
func TestLiveKallsyms(t *testing.T) {
	k, err := New(Options{}).Kernel()
	if errors.Is(err, ErrKptrRestrict) || errors.Is(err, os.ErrNotExist) {
		t.Skipf("kernel symbols not visible here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if k.NumSymbols() < 1000 {
		t.Fatalf("only %d kernel symbols", k.NumSymbols())
	}
	var addr uint64
	for line := range strings.Lines(mustRead(t, "/proc/kallsyms")) {
		if f := strings.Fields(line); len(f) == 3 && f[2] == "schedule" {
			fmt.Sscanf(f[0], "%x", &addr)
		}
	}
	if addr == 0 {
		t.Skip("no schedule symbol in /proc/kallsyms")
	}
	if s, ok := k.Lookup(addr + 1); !ok || s.Name != "schedule" || s.Start != addr {
		t.Errorf("Lookup(schedule+1) = %+v, %v", s, ok)
	}
}

// BenchmarkParseKallsyms parses the running kernel's table, which a
// report of kernel samples waits for.
func BenchmarkParseKallsyms(b *testing.B) {
	text, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		b.Skipf("no /proc/kallsyms here: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseKallsyms(bytes.NewReader(text), LoadOptions{}); err != nil {
			b.Skipf("kernel symbols not visible here: %v", err)
		}
	}
}

// FuzzKallsyms: the table made of any kallsyms text is sorted, each symbol
// covers at least its first byte and ends where the next one starts or
// before, and looking up a symbol's first and last bytes finds it.
func FuzzKallsyms(f *testing.F) {
	f.Add([]byte(mustRead(f, "testdata/kallsyms.txt")))
	f.Add([]byte("2 T b\n1 T a\n1 W a2\n3 D d\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		k, err := ParseKallsyms(bytes.NewReader(text), LoadOptions{RawNames: true})
		if err != nil {
			return
		}
		es := k.syms.entries
		for i, e := range es {
			if e.end <= e.start || i > 0 && es[i-1].end > e.start {
				t.Fatalf("entry %d [%#x, %#x) after [%#x, %#x)", i, e.start, e.end, es[max(i-1, 0)].start, es[max(i-1, 0)].end)
			}
			for _, a := range []uint64{e.start, e.end - 1} {
				if s, ok := k.Lookup(a); !ok || s.Start != e.start || s.Start+s.Size != e.end {
					t.Fatalf("Lookup(%#x) = %+v, %v; want the entry [%#x, %#x)", a, s, ok, e.start, e.end)
				}
			}
		}
	})
}

// TestForgetImages: after ForgetImages an image whose table was read
// into memory is read again (a new Image); one whose table is mapped
// from the symbol cache stays, as do the kernel's symbols.
func TestForgetImages(t *testing.T) {
	t.Setenv("JITPROF_CACHE_DIR", t.TempDir())
	s := New(Options{DebugDirs: []string{}, BuildIDCaches: []string{}, SymbolCache: true})
	libc := "/usr/lib/x86_64-linux-gnu/libc.so.6"
	a, err := s.Open(libc, "")
	if err != nil {
		t.Skipf("no %s to read: %v", libc, err)
	}
	if a.BuildID() == "" {
		t.Skipf("%s has no build-id, which the symbol cache needs", libc)
	}
	k, kerr := s.Kernel()
	if again, _ := s.Open(libc, ""); again != a {
		t.Fatal("an image read twice")
	}
	s.ForgetImages()
	b, err := s.Open(libc, "") // now from the cache that the first read wrote
	if err != nil || b == a {
		t.Fatalf("after ForgetImages: %p, %v; want the image read again", b, err)
	}
	s.ForgetImages()
	if c, err := s.Open(libc, ""); err != nil || c != b {
		t.Errorf("an image whose table is mapped was read again: %p, %v; want %p", c, err, b)
	}
	if k2, kerr2 := s.Kernel(); k2 != k || kerr2 != kerr {
		t.Errorf("the kernel's symbols were read again")
	}
}
