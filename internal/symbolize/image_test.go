package symbolize

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jitprof/jitprof/internal/trust"
)

func TestSymbolsAgreeWithNM(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		pie   bool
	}{
		{"pie", []string{"-fPIE", "-pie"}, true},
		{"no-pie", []string{"-fno-PIE", "-no-pie"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := gcc(t, dir, "prog", append(tc.flags, "testdata/prog.c")...)
			img, err := Load(bin, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			aliases := map[uint64]map[string]bool{}
			syms := nmFuncs(t, bin)
			for _, s := range syms {
				if aliases[s.addr] == nil {
					aliases[s.addr] = map[string]bool{}
				}
				aliases[s.addr][s.name] = true
			}
			checked := 0
			for _, s := range syms {
				got, ok := img.LookupAddr(s.addr)
				if !ok || got.Start != s.addr || !aliases[s.addr][got.Name] {
					t.Errorf("LookupAddr(%#x) = %+v, %v; nm says %s", s.addr, got, ok, s.name)
					continue
				}
				if s.size > 0 {
					if end, ok := img.LookupAddr(s.addr + s.size - 1); !ok || end.Start != s.addr {
						t.Errorf("LookupAddr(last byte of %s) = %+v, %v", s.name, end, ok)
					}
				}
				checked++
			}
			if checked < 3 {
				t.Fatalf("only %d nm symbols checked", checked)
			}

			// The run-time view: IPs in the process's mapping, translated
			// through (start, pgoff) like samples are.
			addrs, maps := runMaps(t, bin)
			for _, fn := range []string{"leaf", "compute", "main"} {
				ip := addrs[fn]
				off := fileOffset(t, maps, bin, ip)
				got, ok := img.LookupFileOffset(off + 1)
				if !ok || got.Name != fn {
					t.Errorf("LookupFileOffset(%#x) for %s at ip %#x = %+v, %v", off+1, fn, ip, got, ok)
				}
				vaddr, _ := img.FileOffsetToAddr(off)
				if want := nmAddr(syms, fn); vaddr != want {
					t.Errorf("FileOffsetToAddr(%#x) = %#x, nm says %s is at %#x", off, vaddr, fn, want)
				}
				if tc.pie == (ip == vaddr) {
					t.Errorf("%s: run-time ip %#x vs vaddr %#x: pie=%v", fn, ip, vaddr, tc.pie)
				}
			}
		})
	}
}

func nmAddr(syms []nmSym, name string) uint64 {
	for _, s := range syms {
		if s.name == name {
			return s.addr
		}
	}
	return 0
}

func TestSharedLibraryAtBias(t *testing.T) {
	dir := t.TempDir()
	lib := gcc(t, dir, "libjp.so", "-shared", "-fPIC", "testdata/lib.c")
	bin := gcc(t, dir, "prog", "-DWITH_LIB", "testdata/prog.c", "-L"+dir, "-ljp", "-Wl,-rpath,"+dir)
	img, err := Load(lib, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	syms := nmFuncs(t, lib)
	addrs, maps := runMaps(t, bin)
	for _, fn := range []string{"lib_helper", "lib_entry"} {
		ip := addrs[fn]
		off := fileOffset(t, maps, filepath.Clean(lib), ip)
		got, ok := img.LookupFileOffset(off)
		if !ok || got.Name != fn || got.Start != nmAddr(syms, fn) {
			t.Errorf("%s at ip %#x, offset %#x: got %+v, %v", fn, ip, off, got, ok)
		}
		if ip == got.Start {
			t.Errorf("%s: library loaded without bias; the test proves nothing", fn)
		}
	}
}

// TestNotELFQuotesNothing: the path of a mapping is the recorded
// process's word, and may name any file of the reader's; debug/elf's
// message would quote its first bytes.
func TestNotELFQuotesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(path, []byte("root:$6$secret:19000:0:99999:7:::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := openELF(path, trust.Unknown)
	if !errors.Is(err, ErrMalformed) || err.Error() != path+": malformed ELF: not a valid ELF file" {
		t.Errorf("err = %v", err)
	}
}

// TestLookupFileOffsetSpan: the spans LookupFileOffsetSpan gives are
// answered alike by LookupFileOffset, at their first and last offset
// and between, for offsets all over the C library and a PIE and a
// non-PIE program, and span no more than their function.
func TestLookupFileOffsetSpan(t *testing.T) {
	dir := t.TempDir()
	paths := []string{gcc(t, dir, "pie", "-fPIE", "-pie", "testdata/prog.c"), gcc(t, dir, "nopie", "-fno-PIE", "-no-pie", "testdata/prog.c")}
	if _, err := os.Stat(libc); err == nil {
		paths = append(paths, libc)
	}
	for _, path := range paths {
		img, err := Load(path, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		end := uint64(0)
		for _, s := range img.loads {
			end = max(end, s.off+s.filesz)
		}
		spans := 0
		for off := uint64(0); off < end+0x100; off += 1 + off%31 {
			want, wok := img.LookupFileOffset(off)
			got, lo, hi, ok := img.LookupFileOffsetSpan(off)
			if got != want || ok != wok {
				t.Fatalf("%s: LookupFileOffsetSpan(%#x) = %+v, %v; LookupFileOffset %+v, %v", path, off, got, ok, want, wok)
			}
			if !ok {
				continue
			}
			spans++
			if off < lo || off >= hi || hi-lo > got.Size {
				t.Fatalf("%s: LookupFileOffsetSpan(%#x): [%#x, %#x) for %+v", path, off, lo, hi, got)
			}
			for _, o := range []uint64{lo, lo + (hi-lo)/2, hi - 1} {
				if s, sok := img.LookupFileOffset(o); s != want || !sok {
					t.Fatalf("%s: LookupFileOffsetSpan(%#x) = %+v for [%#x, %#x), but LookupFileOffset(%#x) = %+v, %v", path, off, want, lo, hi, o, s, sok)
				}
			}
		}
		if spans < 10 {
			t.Errorf("%s: %d offsets in functions checked", path, spans)
		}
	}
}

// TestLookupFileOffsetSpanSegments: an offset two segments map is the
// first's (FileOffsetToAddr), and a function that starts before its
// segment or ends past it is cut to it: every offset of an image whose
// segments overlap in the file is answered by its span as
// LookupFileOffset answers it.
func TestLookupFileOffsetSpanSegments(t *testing.T) {
	img := &Image{
		loads: []segment{{off: 0x1000, filesz: 0x1000, vaddr: 0x401000}, {off: 0x800, filesz: 0x1000, vaddr: 0x600800}, {off: 0x3000, filesz: 0x800, vaddr: 0x803000}, {off: 0x1800, filesz: 0x1000, vaddr: 0xa01800}},
		syms: &table{raw: true, names: []string{"", "a", "b", "c", "d", "e"}, entries: []entry{
			{start: 0x401800, end: 0x402400, name: 1}, // past its segment's end
			{start: 0x600000, end: 0x600c00, name: 2}, // from before its segment
			{start: 0x600c00, end: 0x601800, name: 3}, // over the first segment's offsets
			{start: 0x803100, end: 0x803200, name: 4},
			{start: 0xa01800, end: 0xa02400, name: 5}, // under the first segment's offsets
		}},
	}
	for off := uint64(0); off < 0x4000; off++ {
		want, wok := img.LookupFileOffset(off)
		got, lo, hi, ok := img.LookupFileOffsetSpan(off)
		if got != want || ok != wok {
			t.Fatalf("LookupFileOffsetSpan(%#x) = %+v, %v; LookupFileOffset %+v, %v", off, got, ok, want, wok)
		}
		if !ok {
			continue
		}
		if off < lo || off >= hi {
			t.Fatalf("LookupFileOffsetSpan(%#x): [%#x, %#x)", off, lo, hi)
		}
		for o := lo; o < hi; o++ {
			if s, sok := img.LookupFileOffset(o); s != want || !sok {
				t.Fatalf("LookupFileOffsetSpan(%#x) = %+v for [%#x, %#x), but LookupFileOffset(%#x) = %+v, %v", off, want, lo, hi, o, s, sok)
			}
		}
	}
}
