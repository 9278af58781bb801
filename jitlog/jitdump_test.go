package jitlog

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// perf's jitdump, as in tools/perf/util/jitdump.h and
// tools/perf/Documentation/jitdump-specification.txt, for a decoder
// independent of internal/jitdump, which writes the files.
const (
	jdMagic      = 0x4A695444 // "JiTD" as a little-endian u32
	jdHeaderSize = 40
	jdPrefixSize = 16 // id, total_size, timestamp

	jdCodeLoad  = 0
	jdCodeMove  = 1
	jdDebugInfo = 2
	jdClose     = 3

	jdLoadFixed  = jdPrefixSize + 40
	jdDebugFixed = jdPrefixSize + 16
	jdDebugEntry = 16 // addr, lineno, discrim; then the file name
)

// jdRecord is a jitdump record as this test decodes it, independently of
// the writer: enough of the spec to check what perf inject relies on.
type jdRecord struct {
	id        uint32
	time      uint64
	addr      uint64 // code_addr, or new_code_addr for a move
	oldAddr   uint64
	size      uint64
	index     uint64
	name      string
	code      []byte
	debugAddr []uint64
	debugLine []uint32
	debugFile []string
}

func parseJitdump(t *testing.T, b []byte) (pid uint32, mach uint32, recs []jdRecord) {
	t.Helper()
	if len(b) < jdHeaderSize || le.Uint32(b) != jdMagic || le.Uint32(b[4:]) != 1 || le.Uint32(b[8:]) != jdHeaderSize {
		t.Fatalf("bad jitdump header % x", b[:min(len(b), 40)])
	}
	if flags := le.Uint64(b[32:]); flags != 0 {
		t.Errorf("header flags %#x, want 0 (CLOCK_MONOTONIC time stamps)", flags)
	}
	mach, pid = le.Uint32(b[12:]), le.Uint32(b[20:])
	for p := jdHeaderSize; p < len(b); {
		if len(b)-p < jdPrefixSize {
			t.Fatalf("record prefix at %d cut short", p)
		}
		size := int(le.Uint32(b[p+4:]))
		if size < jdPrefixSize || size > len(b)-p {
			t.Fatalf("record at %d: size %d", p, size)
		}
		r := b[p : p+size]
		rec := jdRecord{id: le.Uint32(r), time: le.Uint64(r[8:])}
		switch rec.id {
		case jdCodeLoad:
			rec.addr, rec.size, rec.index = le.Uint64(r[32:]), le.Uint64(r[40:]), le.Uint64(r[48:])
			if le.Uint64(r[24:]) != rec.addr {
				t.Errorf("load vma %#x != code_addr %#x", le.Uint64(r[24:]), rec.addr)
			}
			nul := bytes.IndexByte(r[jdLoadFixed:], 0)
			rec.name = string(r[jdLoadFixed : jdLoadFixed+nul])
			rec.code = r[jdLoadFixed+nul+1:]
		case jdCodeMove:
			rec.oldAddr, rec.addr, rec.size, rec.index = le.Uint64(r[32:]), le.Uint64(r[40:]), le.Uint64(r[48:]), le.Uint64(r[56:])
		case jdDebugInfo:
			rec.addr = le.Uint64(r[16:])
			q := jdDebugFixed
			for range le.Uint64(r[24:]) {
				rec.debugAddr = append(rec.debugAddr, le.Uint64(r[q:]))
				rec.debugLine = append(rec.debugLine, le.Uint32(r[q+8:]))
				nul := bytes.IndexByte(r[q+jdDebugEntry:], 0)
				rec.debugFile = append(rec.debugFile, string(r[q+jdDebugEntry:q+jdDebugEntry+nul]))
				q += jdDebugEntry + nul + 1
			}
		}
		recs = append(recs, rec)
		p += size
	}
	return pid, mach, recs
}

func TestJitdump(t *testing.T) {
	dir := t.TempDir()
	lo := monoNow(t)
	l := openTest(t, Options{Dir: dir, Jitdump: true})
	path := filepath.Join(dir, "jit-"+strconv.Itoa(os.Getpid())+".dump")
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	var marker string
	for _, line := range strings.Split(string(maps), "\n") {
		if strings.HasSuffix(line, path) {
			marker = line
		}
	}
	if f := strings.Fields(marker); len(f) < 2 || f[1] != "r-xp" {
		t.Errorf("no r-xp marker mapping of %s in /proc/self/maps (got %q)", path, marker)
	}
	code := []byte{0x90, 0x90, 0xc3}
	s1, err := l.CodeLoad(0x5000, 3, "first", &Load{Code: code, Files: []string{"a.js", "b.js"}, Lines: []LineEntry{{0, 0, 7}, {2, 1, 9}}})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := l.CodeLoad(0x5000, 2, "first", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CodeMove(s1, 0x5000, 0x8000); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	hi := monoNow(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, mach, recs := parseJitdump(t, b)
	if pid != uint32(os.Getpid()) {
		t.Errorf("pid %d", pid)
	}
	if m, ok := elfMachines[runtime.GOARCH]; !ok || mach != uint32(m) || (runtime.GOARCH == "amd64" && m != elf.EM_X86_64) {
		t.Errorf("elf machine %d for %s", mach, runtime.GOARCH)
	}
	for _, r := range recs {
		if r.time < lo || r.time > hi {
			t.Errorf("record %d time %d outside CLOCK_MONOTONIC [%d, %d]", r.id, r.time, lo, hi)
		}
	}
	got := fmt.Sprint(len(recs))
	for i := range recs {
		recs[i].time = 0
	}
	want := []jdRecord{
		{id: jdDebugInfo, addr: 0x5000, debugAddr: []uint64{0x5000, 0x5002}, debugLine: []uint32{7, 9}, debugFile: []string{"a.js", "b.js"}},
		{id: jdCodeLoad, addr: 0x5000, size: 3, index: s1, name: "first", code: code},
		{id: jdCodeLoad, addr: 0x5000, size: 2, index: s2, name: "first", code: []byte{0, 0}},
		{id: jdCodeMove, oldAddr: 0x5000, addr: 0x8000, size: 3, index: s1},
		{id: jdClose},
	}
	if !reflect.DeepEqual(recs, want) {
		t.Errorf("%s records:\n got %+v\nwant %+v", got, recs, want)
	}
}
