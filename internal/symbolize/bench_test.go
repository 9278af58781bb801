package symbolize

import (
	"os"
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
	for _, e := range img.syms.entries {
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
