package symbolize

import (
	"os"
	"path/filepath"
	"testing"
)

const libc = "/lib/x86_64-linux-gnu/libc.so.6"

func needLibc(b testing.TB) {
	if _, err := os.Stat(libc); err != nil {
		b.Skipf("no system libc at %s: %v", libc, err)
	}
}

func BenchmarkLoadLibc(b *testing.B) {
	needLibc(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(libc, LoadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLookupLibc(b *testing.B) {
	needLibc(b)
	img, err := Load(libc, LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var addrs []uint64
	for _, e := range img.syms.(*table).entries {
		addrs = append(addrs, e.start+(e.end-e.start)/2)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := img.LookupAddr(addrs[i%len(addrs)]); !ok {
			b.Fatal("miss")
		}
		i++
	}
}

func BenchmarkLookupFileOffsetLibc(b *testing.B) {
	needLibc(b)
	img, err := Load(libc, LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	text := img.loads[1]
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		img.LookupFileOffset(text.off + i%text.filesz)
		i += 4099
	}
}

// goBinary builds a small Go program, whose runtime and fmt give a few MB
// of DWARF with many inlined calls: a realistic load for the DWARF index.
func goBinary(b *testing.B) *Image {
	dir := b.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(1) }\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "hello")
	run(b, "go", "build", "-o", bin, src)
	img, err := Load(bin, LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return img
}

func BenchmarkIndexDWARF(b *testing.B) {
	img := goBinary(b)
	d, size, err := img.openDWARF()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := indexDWARF(img.path, d, size); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFrames(b *testing.B) {
	img := goBinary(b)
	var addrs []uint64
	for _, e := range img.syms.(*table).entries {
		addrs = append(addrs, e.start+(e.end-e.start)/2)
	}
	if _, err := img.Frames(addrs[0]); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := img.Frames(addrs[i%len(addrs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
