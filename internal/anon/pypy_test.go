package anon

import (
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/jitdump"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/perfdata"
)

// realPyPyLog is what Debian's pypy3 7.3.11 logged for
// internal/pypylog/testdata/bridges.py: loops 1 (h), 6 (inner) and 8
// (outer) and seven bridges, in 0x7f93819e2970-0x7f93819e5514.
func realPyPyLog(t testing.TB) []byte {
	b, err := os.ReadFile("../pypylog/testdata/bridges.log")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pypyProcess is a PyPy process with one MiB of JIT memory at jit, the
// log (unless nil) embedded at /tmp/pypy-5.log and, when pairs are given, a TSC
// calibration.
func pypyProcess(log []byte, jit uint64, pairs ...jitbundle.TSCPair) *Process {
	p := &Process{PID: 5, Comm: "pypy3.9",
		Mappings: []Mapping{
			{Start: 0x400000, End: 0x404000, Path: "/usr/bin/pypy3.9", Exec: true},
			{Start: jit, End: jit + 1<<20, Path: "//anon", Anon: true, Exec: true},
		},
		Embedded: map[string][]byte{}}
	if log != nil {
		p.Embedded["/tmp/pypy-5.log"] = log
	}
	if len(pairs) > 0 {
		p.Embedded[jitbundle.TSCPath] = jitbundle.EncodeTSC(pairs)
	}
	return p
}

func claimPyPy(t *testing.T, p *Process) Resolver {
	t.Helper()
	r, h, errs := Claim(WithPyPyLog(nil, "/tmp/pypy-%d.log"), p)
	if r == nil || h.Name() != "pypy" {
		t.Fatalf("not claimed: %v", errs)
	}
	return r
}

// TestPyPyReal names the loops and bridges of a real log, with the
// Python lines their machine code came from.
func TestPyPyReal(t *testing.T) {
	// TSC ticks as nanoseconds, so the log's times are the samples'.
	r := claimPyPy(t, pypyProcess(realPyPyLog(t), 0x7f93819e0000, jitbundle.TSCPair{}, jitbundle.TSCPair{TSC: 1 << 50, Nanos: 1 << 50}))
	if src := r.Source(); !strings.Contains(src, "pypy /tmp/pypy-5.log (embedded in the recording), times by the recording's TSC calibration") {
		t.Errorf("source %q", src)
	}
	const late = 0x24ff389fab403 // the log's last timestamp
	for _, tc := range []struct {
		addr uint64
		name string
		file string
		line int
	}{
		{0x7f93819e2a00, "h [loop 1]", "/tmp/pypyx/br.py", 4},                   // the bootstrap
		{0x7f93819e2970 + 384, "h [loop 1]", "/tmp/pypyx/br.py", 4},             // guard_value after FOR_ITER's merge point
		{0x7f93819e2f20 + 113, "h [bridge 1 of loop 1]", "/tmp/pypyx/br.py", 5}, // +110: after BINARY_MODULO's
		{0x7f93819e2f70, "h [bridge 1 of loop 1]", "/tmp/pypyx/br.py", 7},       // the guard it leaves is on line 7
		{0x7f93819e3940, "inner [loop 6]", "/tmp/pypyx/br.py", 14},
		{0x7f93819e5100, "inner [bridge 2 of loop 6]", "/tmp/pypyx/br.py", 0},
		{0x7f93819e4220, "outer [loop 8]", "/tmp/pypyx/br.py", 19},
		{0x7f93819e5400, "outer [bridge 1 of loop 8]", "/tmp/pypyx/br.py", 0},
	} {
		s, ok := r.Resolve(tc.addr, late)
		if !ok || s.Name != tc.name || s.File != tc.file || tc.line != 0 && s.Line != tc.line {
			t.Errorf("%#x: %q %s:%d (%v), want %q %s:%d", tc.addr, s.Name, s.File, s.Line, ok, tc.name, tc.file, tc.line)
		}
	}
	// Before loop 6 was compiled its range held nothing.
	if s, ok := r.Resolve(0x7f93819e3940, 0x24ff389367144-1_000_000); ok {
		t.Errorf("loop 6's code named before it existed: %+v", s)
	}
	if _, ok := r.Resolve(0x7f93819e0000, late); ok {
		t.Error("JIT memory no loop used is named")
	}
}

// reuseLog has loop 2 reusing loop 1's memory, as PyPy does once it
// freed loop 1, at tick 0x5000.
const reuseLog = `[1000] {jit-backend-addr
Loop 1 (f;/app/a.py:1-3~#12 FOR_ITER) has address 0x7f0000001080 to 0x7f0000001100 (bootstrap 0x7f0000001040)
       gc table: 0x7f0000001000
       function: 0x7f0000001040
         resops: 0x7f0000001080
       failures: 0x7f0000001100
            end: 0x7f0000001180
[1001] jit-backend-addr}
[5000] {jit-backend-addr
Loop 2 (g;/app/b.py:10-12~#20 FOR_ITER) has address 0x7f0000001080 to 0x7f0000001100 (bootstrap 0x7f0000001040)
       gc table: 0x7f0000001000
       function: 0x7f0000001040
         resops: 0x7f0000001080
       failures: 0x7f0000001100
            end: 0x7f0000001180
[5001] jit-backend-addr}
`

// TestPyPyReuse: a range reused by a later loop is charged by time, by
// the recording's TSC calibration; without one both names are reported.
func TestPyPyReuse(t *testing.T) {
	// 2 ticks per ns; tick 0x1000 (4096) is 1_000_002_048 ns.
	pairs := []jitbundle.TSCPair{{TSC: 0, Nanos: 1_000_000_000}, {TSC: 2_000_000_000, Nanos: 2_000_000_000}}
	r := claimPyPy(t, pypyProcess([]byte(reuseLog), 0x7f0000000000, pairs...))
	for _, tc := range []struct {
		t    uint64
		name string
	}{
		{1_000_002_048 + 10, "f [loop 1]"},
		{1_000_010_239, "f [loop 1]"}, // just before tick 0x5000
		{1_000_010_240, "g [loop 2]"},
		{5_000_000_000, "g [loop 2]"},
	} {
		if s, ok := r.Resolve(0x7f00000010a0, tc.t); !ok || s.Name != tc.name {
			t.Errorf("at %d ns: %q (%v), want %q", tc.t, s.Name, ok, tc.name)
		}
	}
	// Before loop 1, by more than the clock skew codemap allows for.
	if s, ok := r.Resolve(0x7f00000010a0, 1_000_002_048-20_000); ok {
		t.Errorf("named before any loop: %+v", s)
	}

	r = claimPyPy(t, pypyProcess([]byte(reuseLog), 0x7f0000000000))
	if src := r.Source(); !strings.Contains(src, "no TSC calibration in the recording") {
		t.Errorf("source %q", src)
	}
	s, ok := r.Resolve(0x7f00000010a0, 5_000_000_000)
	if !ok || s.Name != "" || !slices.Equal(s.Ambiguous, []string{"f [loop 1]", "g [loop 2]"}) {
		t.Errorf("without times: %+v, want both loops", s)
	}

	bad := pypyProcess([]byte(reuseLog), 0x7f0000000000, jitbundle.TSCPair{TSC: 1, Nanos: 1})
	r = claimPyPy(t, bad)
	if src := r.Source(); !strings.Contains(src, "TSC calibration is unusable") {
		t.Errorf("source %q", src)
	}
}

func TestPyPyClaims(t *testing.T) {
	log := []byte(reuseLog)
	node := &Process{PID: 5, Comm: "node", Mappings: []Mapping{{Start: 0x7f0000000000, End: 0x7f0000100000, Path: "//anon", Anon: true, Exec: true}},
		Embedded: map[string][]byte{"/tmp/pypy-5.log": log}}
	if r, err := WithPyPyLog(nil, "/tmp/pypy-%d.log")[0].Claim(node); r != nil || err != nil {
		t.Errorf("a node process: %v, %v; want it declined", r, err)
	}
	// Found by the library it maps, whatever its command.
	lib := pypyProcess(log, 0x7f0000000000)
	lib.Comm, lib.Mappings[0].Path = "app", "/usr/lib/x86_64-linux-gnu/libpypy3.9-c.so"
	claimPyPy(t, lib)

	for _, tc := range []struct {
		name string
		hs   []Handler
		p    *Process
		want string
	}{
		{"no log given", []Handler{&pypyHandler{}}, pypyProcess(log, 0x7f0000000000), "no PyPy log given"},
		{"log missing", WithPyPyLog(nil, "/nonexistent/pypy-%d.log"), pypyProcess(nil, 0x7f0000000000), "tried /nonexistent/pypy-5.log"},
		{"another run's log", WithPyPyLog(nil, "/tmp/pypy-%d.log"), pypyProcess(log, 0x7e0000000000), "none of its 2 loops and bridges lies in the JIT memory of pid 5"},
		{"no loops", WithPyPyLog(nil, "/tmp/pypy-%d.log"), pypyProcess([]byte("[1] {gc-minor\n[2] gc-minor}\n"), 0x7f0000000000), "the log names no loops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _, errs := Claim(tc.hs, tc.p)
			if r != nil || len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) || !errors.Is(errs[0], ErrNoData) {
				t.Errorf("claimed %v, errors %v; want ErrNoData with %q", r, errs, tc.want)
			}
		})
	}
	r, _, errs := Claim(WithPyPyLog(nil, "/tmp/pypy-%d.log"), pypyProcess([]byte("[1] {jit-backend-addr\nLoop 1 (f) has address 0x10 to 0x5\n[2] jit-backend-addr}\n"), 0))
	if r != nil || len(errs) != 1 || !strings.Contains(errs[0].Error(), "/tmp/pypy-5.log: pypylog: line 2: loop 1's code runs from 0x10 to 0x5") {
		t.Errorf("a bad log: %v, %v", r, errs)
	}
}

// TestPyPyCodeCache: PyPy's code in a memfd or in huge pages is JIT
// memory as perf judges it (perfdata.IsAnon), from the MMAP2 record on,
// and goes to the handler; a file mapped executable is not.
func TestPyPyCodeCache(t *testing.T) {
	log := []byte(reuseLog)
	const jit = 0x7f0000000000
	for _, c := range []struct {
		name  string
		path  string
		flags uint32
		claim bool
	}{
		{"memfd", "/memfd:pypy-jit (deleted)", unix.MAP_SHARED, true},
		{"huge pages", "/dev/hugepages/pypy-jit", unix.MAP_SHARED | perfdata.MapHugeTLB, true},
		{"a file", "/usr/lib/jit-cache.bin", unix.MAP_PRIVATE, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			pm := process.FromMmap(&perfdata.Mmap{Version2: true, PID: 5, TID: 5, Addr: jit, Len: 1 << 20,
				Prot: unix.PROT_READ | unix.PROT_EXEC, Flags: c.flags, Filename: c.path})
			p := pypyProcess(log, 0)
			p.Mappings[1] = MappingOf(&pm)
			r, _, errs := Claim(WithPyPyLog(nil, "/tmp/pypy-%d.log"), p)
			if (r != nil) != c.claim {
				t.Errorf("%s mapped %s: claimed %v (errors %v), want %v", c.path, p.Mappings[1].Path, r != nil, errs, c.claim)
			}
		})
	}
}

// TestPyPyCut: a log cut short by a killed PyPy names what it holds and
// says it was cut.
func TestPyPyCut(t *testing.T) {
	log := realPyPyLog(t)
	r := claimPyPy(t, pypyProcess(log[:len(log)-20], 0x7f93819e0000))
	if src := r.Source(); !strings.Contains(src, "is cut short") {
		t.Errorf("source %q", src)
	}
	if s, ok := r.Resolve(0x7f93819e4220, 0); !ok || s.Name != "outer [loop 8]" {
		t.Errorf("loop 8 of a cut log: %+v", s)
	}
}

// TestWithPyPyLog: the handler with the log takes the built-in's place,
// or comes last.
func TestWithPyPyLog(t *testing.T) {
	hs, err := Select(nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range WithPyPyLog(hs, "f") {
		names = append(names, h.Name())
		if h.Name() == "pypy" && h.(*pypyHandler).log != "f" {
			t.Error("the built-in pypy handler kept")
		}
	}
	var builtins []string
	for _, h := range Builtins() {
		builtins = append(builtins, h.Name())
	}
	if !slices.Equal(names, builtins) {
		t.Errorf("handlers %v, want %v", names, builtins)
	}
	hs, _ = Select([]string{"perfmap"})
	if got := WithPyPyLog(hs, "f"); len(got) != 2 || got[1].Name() != "pypy" {
		t.Errorf("handlers %v, want perfmap then pypy", got)
	}
}

// FuzzPyPyClaim: any log embedded for a PyPy process is refused or
// resolves, never panics.
func FuzzPyPyClaim(f *testing.F) {
	f.Add([]byte(reuseLog))
	f.Add([]byte(reuseLog[:300]))
	f.Add([]byte("[1] {jit-backend-addr\nbridge out of Guard 0x7f0000009000 has address 0x7f0000002000 to 0x7f0000002100\n[2] jit-backend-addr}\n[3] {jit-log-opt-bridge\n# bridge out of Guard 0x7f0000009000 with 1 ops\n+80: jump(descr=<Guard0x1>)\n[4] jit-log-opt-bridge}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, pairs := range [][]jitbundle.TSCPair{nil, {{TSC: 0, Nanos: 0}, {TSC: 1 << 40, Nanos: 1 << 40}}} {
			r, _, _ := Claim(WithPyPyLog(nil, "/tmp/pypy-%d.log"), pypyProcess(b, 0x7f0000000000, pairs...))
			if r == nil {
				continue
			}
			for _, a := range []uint64{0x7f0000001040, 0x7f00000010a0, 0x7f0000002050} {
				for _, tm := range []uint64{0, 0x1000, 1 << 62} {
					if s, ok := r.Resolve(a, tm); ok != s.Found() {
						t.Errorf("Resolve(%#x, %d) = %+v, %v", a, tm, s, ok)
					}
				}
			}
		}
	})
}

// TestPyPyCallback: compile_tmp_callback's nameless stubs, "Loop -1 ()"
// in pystone's log, get a name that says what they are.
func TestPyPyCallback(t *testing.T) {
	log := "[1] {jit-backend-addr\nLoop -1 () has address 0x7f00000030ab to 0x7f0000003190 (bootstrap 0x7f0000003020)\n       function: 0x7f0000003020\n            end: 0x7f00000031db\n[2] jit-backend-addr}\n"
	r := claimPyPy(t, pypyProcess([]byte(log), 0x7f0000000000))
	if s, ok := r.Resolve(0x7f0000003100, 0); !ok || s.Name != "call to the interpreter [loop -1]" {
		t.Errorf("the stub: %+v", s)
	}
}

// TestPyPySeq: a session's numbered dump of a PyPy log (PyPySeq, as the
// daemon writes it) is claimed by the built-in pypy handler, by the
// kind of its data whatever the process's name, and names each
// generation at one address by its sequence number, as the log named it
// and without a [gen N] (the loop number tells them apart).
func TestPyPySeq(t *testing.T) {
	dump, err := jitdump.AppendHeader(nil, jitdump.Header{ByteOrder: binary.LittleEndian, Version: 1, ElfMach: 62, PID: 5})
	if err != nil {
		t.Fatal(err)
	}
	for seq, name := range []string{"f [loop 0]", "g [loop 4]"} {
		dump, err = jitdump.AppendRecord(dump, binary.LittleEndian, &jitdump.CodeLoad{PID: 5, TID: 5, VMA: 0x7f0000001000, CodeAddr: 0x7f0000001000, CodeSize: 0x100, CodeIndex: uint64(seq + 1), Name: name,
			RecordHeader: jitdump.RecordHeader{Timestamp: uint64(100 * (seq + 1))}})
		if err != nil {
			t.Fatal(err)
		}
	}
	p := &Process{PID: 5, Comm: "worker", Embedded: map[string][]byte{"/tmp/pypy.log.seq": dump}, Kinds: map[string]string{"/tmp/pypy.log.seq": PyPySeq}}
	r, h, errs := Claim(Builtins(), p)
	if r == nil || h.Name() != "pypy" {
		t.Fatalf("not claimed by pypy: %v", errs)
	}
	sr, ok := r.(SeqResolver)
	if !ok {
		t.Fatal("the resolver does not resolve by sequence number")
	}
	for seq, want := range map[uint64]string{1: "f [loop 0]", 2: "g [loop 4]"} {
		s, ok := sr.ResolveSeq(0x7f0000001080, seq)
		if !ok || s.Name != want || s.Gen != 0 || s.Start != 0x7f0000001000 || s.Size != 0x100 {
			t.Errorf("seq %d: %+v, %v; want %s at 0x7f0000001000, no generation", seq, s, ok, want)
		}
	}
	if _, ok := sr.ResolveSeq(0x7f0000001080, 3); ok {
		t.Error("seq 3, which the dump has not, resolves")
	}
	if !strings.Contains(r.Source(), "/tmp/pypy.log") {
		t.Errorf("source %q does not name the log", r.Source())
	}
}
