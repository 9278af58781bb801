package anon

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/codemap"
	"github.com/jitprof/jitprof/internal/jitdump"
	"github.com/jitprof/jitprof/internal/perfmap"
	"github.com/jitprof/jitprof/jitlog"
)

// The reuse scenario: a JIT compiles foo at 0x1000, frees it, and
// compiles bar at the same address.
const (
	reuseAddr = 0x7f0000001000
	tFoo      = 1_000_000_000
	tBar      = 2_000_000_000
)

func reuseDump(t testing.TB, pid uint32, flags uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := jitdump.NewWriter(&buf, jitdump.Header{ElfMach: 62, PID: pid, Timestamp: 1, Flags: flags})
	if err != nil {
		t.Fatal(err)
	}
	code := make([]byte, 0x100)
	recs := []jitdump.Record{
		&jitdump.DebugInfo{RecordHeader: jitdump.RecordHeader{Type: jitdump.TypeCodeDebugInfo, Timestamp: tFoo}, CodeAddr: reuseAddr, Entries: []jitdump.DebugEntry{
			{Addr: reuseAddr, Line: 3, File: "/app/foo.js"},
			{Addr: reuseAddr + 0x40, Line: 5, File: "/app/foo.js"},
		}},
		&jitdump.CodeLoad{RecordHeader: jitdump.RecordHeader{Type: jitdump.TypeCodeLoad, Timestamp: tFoo}, PID: pid, TID: pid, VMA: reuseAddr, CodeAddr: reuseAddr, CodeSize: 0x100, CodeIndex: 1, Name: "JS:*foo /app/foo.js:3", Code: code},
		&jitdump.UnwindingInfo{RecordHeader: jitdump.RecordHeader{Type: jitdump.TypeCodeUnwindingInfo, Timestamp: tBar}, Data: []byte{1, 2, 3, 4}},
		&jitdump.CodeLoad{RecordHeader: jitdump.RecordHeader{Type: jitdump.TypeCodeLoad, Timestamp: tBar}, PID: pid, TID: pid, VMA: reuseAddr, CodeAddr: reuseAddr, CodeSize: 0x80, CodeIndex: 2, Name: "JS:*bar /app/bar.js:9", Code: code[:0x80]},
		&jitdump.CodeMove{RecordHeader: jitdump.RecordHeader{Type: jitdump.TypeCodeMove, Timestamp: tBar + 1000}, PID: pid, TID: pid, VMA: 0x7f0000009000, OldCodeAddr: reuseAddr, NewCodeAddr: 0x7f0000009000, CodeSize: 0x80, CodeIndex: 2},
		&jitdump.CodeClose{RecordHeader: jitdump.RecordHeader{Type: jitdump.TypeCodeClose, Timestamp: tBar + 2000}},
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func reuseMap(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	err := perfmap.Write(&buf, []perfmap.Symbol{
		{Start: reuseAddr, Size: 0x100, Name: "JS:*foo /app/foo.js:3"},
		{Start: reuseAddr, Size: 0x80, Name: "JS:*bar /app/bar.js:9"},
		{Start: 0x7f0000009000, Size: 0x10, Name: "Builtin: with spaces"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func claim(t *testing.T, name string, p *Process) Resolver {
	t.Helper()
	hs, err := Select([]string{name})
	if err != nil {
		t.Fatal(err)
	}
	r, h, errs := Claim(hs, p)
	if len(errs) > 0 || r == nil {
		t.Fatalf("%s did not claim pid %d: %v", name, p.PID, errs)
	}
	if h.Name() != name {
		t.Fatalf("claimed by %s, want %s", h.Name(), name)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestReuse(t *testing.T) {
	dir := t.TempDir()
	dump := filepath.Join(dir, "jit-4242.dump")
	if err := os.WriteFile(dump, reuseDump(t, 4242, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := Mapping{Start: 0x7f00aa000000, End: 0x7f00aa001000, Path: dump, Exec: true}
	jd := claim(t, "jitdump", &Process{PID: 4242, Mappings: []Mapping{marker}})
	if want := "jitdump " + dump; jd.Source() != want {
		t.Errorf("Source() = %q, want %q", jd.Source(), want)
	}
	pm := claim(t, "perfmap", &Process{PID: 4242, Embedded: map[string][]byte{"/tmp/perf-4242.map": reuseMap(t)}})
	if !strings.HasSuffix(pm.Source(), "(embedded in the recording)") {
		t.Errorf("Source() = %q, want the embedded copy", pm.Source())
	}
	// The dump carries each load's code bytes, which annotate shows.
	// Each lives from its load until code replaced it (foo), moved it
	// (bar) or the end (bar moved).
	foo := Symbol{Name: "JS:*foo /app/foo.js:3", Start: reuseAddr, Size: 0x100, Gen: 1, File: "/app/foo.js", Line: 5, Code: make([]byte, 0x100), Load: tFoo, Unload: tBar, Held: true}
	bar := Symbol{Name: "JS:*bar /app/bar.js:9", Start: reuseAddr, Size: 0x80, Gen: 2, Code: make([]byte, 0x80), Load: tBar, Unload: tBar + 1000, Held: true}
	barMoved := bar
	barMoved.Start, barMoved.Load, barMoved.Unload = 0x7f0000009000, tBar+1000, codemap.Forever
	both := Symbol{Start: reuseAddr, Size: 0x80, Ambiguous: []string{foo.Name, bar.Name}, Held: true}
	tests := []struct {
		name    string
		r       Resolver
		addr, t uint64
		want    Symbol
	}{
		{"dump foo", jd, reuseAddr + 0x50, tFoo + 5, foo},
		{"dump bar, same address", jd, reuseAddr + 0x50, tBar + 5, bar},
		{"dump foo tail, after bar", jd, reuseAddr + 0xf0, tBar + 5, Symbol{}},
		{"dump before any load", jd, reuseAddr, tFoo - codemapSkew - 1, Symbol{}},
		{"dump bar moved away", jd, reuseAddr + 0x10, tBar + 5000, Symbol{}},
		{"dump bar at its new place", jd, 0x7f0000009010, tBar + 5000, barMoved},
		{"map names both", pm, reuseAddr + 0x50, tFoo + 5, both},
		{"map foo tail", pm, reuseAddr + 0xf0, 0, Symbol{Name: foo.Name, Start: reuseAddr, Size: 0x100, Held: true}},
		{"map name with spaces", pm, 0x7f0000009008, 0, Symbol{Name: "Builtin: with spaces", Start: 0x7f0000009000, Size: 0x10, Held: true}},
		{"map miss", pm, 0x10, 0, Symbol{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.r.Resolve(tt.addr, tt.t)
			if !reflect.DeepEqual(got, tt.want) || ok != tt.want.Found() {
				t.Errorf("Resolve(%#x, %d) = %+v, %v; want %+v", tt.addr, tt.t, got, ok, tt.want)
			}
			if b := ResolveBatch(tt.r, []Query{{tt.addr, tt.t}}); !reflect.DeepEqual(b[0], tt.want) {
				t.Errorf("ResolveBatch = %+v, want %+v", b[0], tt.want)
			}
		})
	}
}

// TestPerfMapSameName: a JVM's perf map names one method's tiers alike
// at different addresses; each copy is told apart by its address, names
// the map gives once stay as they are, and a line repeated at the same
// address is one copy.
func TestPerfMapSameName(t *testing.T) {
	const m = `0x00007f97fcec7600 0x98 double Hot.trig(double)
0x00007f97fcec7940 0xf8 double Hot.other(int)
0x00007f97f5400ec0 0x170 double Hot.trig(double)
0x00007f97f5401300 0x310 Interpreter
0x00007f97f5402000 0x100 double Hot.trig(double)
0x00007f97fcec7940 0xf8 double Hot.other(int)
0x00007f97f5403000 0 double Hot.other(int)
`
	r := claim(t, "perfmap", &Process{PID: 31, Embedded: map[string][]byte{"/tmp/perf-31.map": []byte(m)}})
	for addr, want := range map[uint64]string{
		0x7f97fcec7610: "double Hot.trig(double) [0x7f97fcec7600]",
		0x7f97f5400ec0: "double Hot.trig(double) [0x7f97f5400ec0]",
		0x7f97f54020ff: "double Hot.trig(double) [0x7f97f5402000]",
		0x7f97fcec7941: "double Hot.other(int)",
		0x7f97f5401300: "Interpreter",
	} {
		if got, _ := r.Resolve(addr, 0); got.Name != want {
			t.Errorf("Resolve(%#x) = %+v, want %q", addr, got, want)
		}
	}
}

// codemapSkew is codemap.DefaultSkew: a sample just before a load may be
// charged to it.
const codemapSkew = 10_000

func TestJitdumpArchTimestamp(t *testing.T) {
	p := &Process{PID: 7, Embedded: map[string][]byte{"/tmp/jit-7.dump": reuseDump(t, 7, jitdump.FlagArchTimestamp)}}
	r := claim(t, "jitdump", p)
	got, _ := r.Resolve(reuseAddr+0x10, tBar+5)
	if len(got.Ambiguous) != 2 {
		t.Errorf("TSC-stamped dump resolved %+v, want both names: its times cannot be compared with the samples'", got)
	}
}

func TestJitdumpOtherPID(t *testing.T) {
	p := &Process{PID: 8, Embedded: map[string][]byte{"/tmp/jit-8.dump": reuseDump(t, 9, 0)}}
	hs, _ := Select([]string{"jitdump"})
	r, _, errs := Claim(hs, p)
	if r != nil || len(errs) != 1 || !strings.Contains(errs[0].Error(), "written by pid 9, not 8") {
		t.Errorf("claim of a stale dump: %v, %v", r, errs)
	}
}

func TestJitlog(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(jitlog.EnvDir, dir)
	l, err := jitlog.Open(jitlog.Options{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s1, err := l.CodeLoad(reuseAddr, 0x100, "foo", &jitlog.Load{Files: []string{"foo.go"}, Lines: []jitlog.LineEntry{{CodeOffset: 0, Line: 10}, {CodeOffset: 0x20, Line: 12}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CodeUnload(s1); err != nil {
		t.Fatal(err)
	}
	s2, err := l.CodeLoad(reuseAddr, 0x100, "foo", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	r := claim(t, "jitlog", &Process{PID: os.Getpid(), UID: os.Getuid()})
	sr, ok := r.(SeqResolver)
	if !ok {
		t.Fatal("jitlog resolver is no SeqResolver")
	}
	got1, ok1 := sr.ResolveSeq(reuseAddr+0x30, s1)
	got2, ok2 := sr.ResolveSeq(reuseAddr+0x30, s2)
	if !ok1 || !ok2 || got1.Gen != s1 || got1.File != "foo.go" || got1.Line != 12 || got2.Gen != s2 || got2.Line != 0 {
		t.Errorf("ResolveSeq: %+v %v, %+v %v; want generations %d with foo.go:12 and %d without lines", got1, ok1, got2, ok2, s1, s2)
	}
	if got, ok := r.Resolve(reuseAddr, codemapForever); !ok || got.Gen != s2 {
		t.Errorf("Resolve at the end = %+v, want generation %d", got, s2)
	}
}

// codemapForever is later than any load; codemap.Forever itself is past every unload.
const codemapForever = 1 << 62

func TestContainerPaths(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "tmp", "perf-12.map"), []byte("1000 10 inner\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Process{PID: 987654, NSPID: 12, Root: root}
	r := claim(t, "perfmap", p)
	if got, _ := r.Resolve(0x1008, 0); got.Name != "inner" {
		t.Errorf("Resolve = %+v, want inner", got)
	}

	// Gone: no Root, so the inner pid's map cannot be found, and the error
	// says where it looked.
	p = &Process{PID: 987654, NSPID: 12, Root: filepath.Join(root, "gone")}
	hs, _ := Select([]string{"perfmap"})
	_, _, errs := Claim(hs, p)
	if len(errs) != 1 || !errors.Is(errs[0], ErrNoData) || !strings.Contains(errs[0].Error(), filepath.Join(root, "gone", "tmp", "perf-12.map")) {
		t.Errorf("errors = %v, want ErrNoData naming the path tried", errs)
	}
}

// TestRangesNoCodeCanHave: a perf map or jitdump naming 2^63 bytes of code
// is refused with where and why, not used to name every sample.
func TestRangesNoCodeCanHave(t *testing.T) {
	// jitdump's Writer refuses such a load: write it field by field.
	le := binary.LittleEndian
	dump := le.AppendUint32(nil, jitdump.Magic)
	for _, v := range []uint32{1, jitdump.HeaderSize, 62, 0, 5} {
		dump = le.AppendUint32(dump, v)
	}
	dump = le.AppendUint64(le.AppendUint64(dump, 1), 0)
	name := "huge\x00"
	dump = le.AppendUint32(le.AppendUint32(dump, uint32(jitdump.TypeCodeLoad)), uint32(jitdump.RecordHeaderSize+40+len(name)))
	dump = le.AppendUint64(dump, 2)
	dump = le.AppendUint32(le.AppendUint32(dump, 5), 5)
	for _, v := range []uint64{0x1000, 0x1000, 1 << 63, 1} {
		dump = le.AppendUint64(dump, v)
	}
	dump = append(dump, name...)
	for _, tt := range []struct{ handler, path, want string }{
		{"perfmap", "/tmp/perf-5.map", "/tmp/perf-5.map:2: codemap: bad address range: 0x1000+0x8000000000000000 is larger than any code can be (2 GiB)"},
		{"jitdump", "/tmp/jit-5.dump", "/tmp/jit-5.dump: CODE_LOAD at offset 40: codemap: bad address range"},
	} {
		data := []byte("2000 10 fine\n1000 8000000000000000 huge\n")
		if tt.handler == "jitdump" {
			data = dump
		}
		hs, _ := Select([]string{tt.handler})
		r, _, errs := Claim(hs, &Process{PID: 5, Embedded: map[string][]byte{tt.path: data}})
		if r != nil || len(errs) != 1 || !errors.Is(errs[0], codemap.ErrBadRange) || !strings.Contains(errs[0].Error(), tt.want) {
			t.Errorf("%s: Claim = %v, %v; want %q", tt.handler, r, errs, tt.want)
		}
	}
}

// jitEHFrame is the .eh_frame a JIT logs for code of size bytes: placed,
// as jitdump's and jitlog's layout has it, at the first 8-byte boundary
// after the code; one FDE over the whole code whose CFA goes from rsp+8
// to rsp+16 after its first byte (a push).
func jitEHFrame(size uint64) []byte {
	le := binary.LittleEndian
	cie := []byte{1, 'z', 'R', 0, 1, 0x78, 0x10, 1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0}
	b := le.AppendUint32(nil, uint32(4+len(cie)))
	b = le.AppendUint32(b, 0)
	b = append(b, cie...)
	fde := len(b)
	base := int64((size + 7) &^ 7) // the .eh_frame's place, from the code's start
	body := le.AppendUint32(nil, uint32(fde+4))
	body = le.AppendUint32(body, uint32(int32(-(base + int64(fde) + 8))))
	body = le.AppendUint32(body, uint32(size))
	body = append(body, 0, 0x41, 0x0e, 16, 0, 0, 0) // no augmentation; +1: CFA rsp+16
	b = le.AppendUint32(b, uint32(len(body)))
	return append(b, body...)
}

func TestJitlogUnwind(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(jitlog.EnvDir, dir)
	l, err := jitlog.Open(jitlog.Options{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	seq, err := l.CodeLoad(reuseAddr, 0x41, "foo", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CodeUnwind(seq, jitEHFrame(0x41)); err != nil {
		t.Fatal(err)
	}
	other, err := l.CodeLoad(reuseAddr+0x1000, 0x40, "bar", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	r := claim(t, "jitlog", &Process{PID: os.Getpid(), UID: os.Getuid()})
	u, ok := r.(Unwinder)
	if !ok {
		t.Fatal("jitlog resolver is no Unwinder")
	}
	tb, base, ok := u.UnwindTable(reuseAddr+0x10, codemapForever)
	// Rows at the code's start and after its first byte, and the end.
	if !ok || base != reuseAddr || tb.NumRows() != 3 {
		t.Fatalf("UnwindTable = %v rows, base %#x, %v; want 3 rows from %#x", tb, base, ok, uint64(reuseAddr))
	}
	if _, _, ok := u.UnwindTable(reuseAddr+0x1010, codemapForever); ok {
		t.Errorf("code %d without unwinding information has a table", other)
	}
}

// TestJitdumpUnwind: a CODE_UNWINDING_INFO (the .eh_frame, then a
// 20-byte .eh_frame_hdr, as V8 writes it) describes the CODE_LOAD after
// it, and follows its code when it moves.
func TestJitdumpUnwind(t *testing.T) {
	const pid, moved = 11, 0x7f0000009000
	var buf bytes.Buffer
	w, err := jitdump.NewWriter(&buf, jitdump.Header{ElfMach: 62, PID: pid, Timestamp: 1})
	if err != nil {
		t.Fatal(err)
	}
	eh := jitEHFrame(0x41)
	hdr := make([]byte, 20) // not read: the .eh_frame is found by size
	code := make([]byte, 0x41)
	for _, r := range []jitdump.Record{
		&jitdump.UnwindingInfo{RecordHeader: jitdump.RecordHeader{Type: jitdump.TypeCodeUnwindingInfo, Timestamp: tFoo}, EHFrameHdrSize: 20, MappedSize: uint64(len(eh) + 20), Data: append(eh, hdr...)},
		&jitdump.CodeLoad{RecordHeader: jitdump.RecordHeader{Type: jitdump.TypeCodeLoad, Timestamp: tFoo}, PID: pid, TID: pid, VMA: reuseAddr, CodeAddr: reuseAddr, CodeSize: 0x41, CodeIndex: 1, Name: "JS:*foo", Code: code},
		&jitdump.CodeLoad{RecordHeader: jitdump.RecordHeader{Type: jitdump.TypeCodeLoad, Timestamp: tFoo}, PID: pid, TID: pid, VMA: reuseAddr + 0x1000, CodeAddr: reuseAddr + 0x1000, CodeSize: 0x40, CodeIndex: 2, Name: "JS:*bar", Code: code[:0x40]},
		&jitdump.CodeMove{RecordHeader: jitdump.RecordHeader{Type: jitdump.TypeCodeMove, Timestamp: tBar}, PID: pid, TID: pid, VMA: moved, OldCodeAddr: reuseAddr, NewCodeAddr: moved, CodeSize: 0x41, CodeIndex: 1},
	} {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	r := claim(t, "jitdump", &Process{PID: pid, Embedded: map[string][]byte{"/tmp/jit-11.dump": buf.Bytes()}})
	u, ok := r.(Unwinder)
	if !ok {
		t.Fatal("jitdump resolver is no Unwinder")
	}
	for _, c := range []struct{ addr, time, base uint64 }{{reuseAddr + 0x10, tFoo + 1, reuseAddr}, {moved + 0x10, tBar + 1, moved}} {
		tb, base, ok := u.UnwindTable(c.addr, c.time)
		if !ok || base != c.base || tb.NumRows() != 3 {
			t.Errorf("UnwindTable(%#x) = %v, base %#x, %v; want 3 rows from %#x", c.addr, tb, base, ok, c.base)
		}
	}
	// The record describes the next load only.
	if _, _, ok := u.UnwindTable(reuseAddr+0x1010, tFoo+1); ok {
		t.Error("the second load has the first's unwinding information")
	}
}
