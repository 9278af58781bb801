package pypylog

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func readFile(t *testing.T, path string, opts Options) *Log {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := Read(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestReadReal reads the log Debian's pypy3 7.3.11 wrote for
// testdata/bridges.py with PYPYLOG=jit-backend-addr,jit-log-opt:FILE.
func TestReadReal(t *testing.T) {
	l := readFile(t, "testdata/bridges.log", Options{Ops: true})
	if l.Cut || len(l.Warnings) > 0 || l.Lines != 748 || !l.HasTime || l.First != 0x24ff38801f199 || l.Last != 0x24ff389fab403 {
		t.Errorf("cut %v warnings %q lines %d span %#x..%#x", l.Cut, l.Warnings, l.Lines, l.First, l.Last)
	}
	var loops []string
	for _, c := range l.Codes {
		if !c.Bridge {
			loops = append(loops, c.Loc.Func)
		}
	}
	if len(l.Codes) != 10 || len(l.Traces) != 10 || strings.Join(loops, ",") != "h,inner,outer" {
		t.Fatalf("%d codes, %d traces, loops %v; want 10, 10, h,inner,outer", len(l.Codes), len(l.Traces), loops)
	}
	for i, c := range l.Codes {
		if c.Trace < 0 || l.Traces[c.Trace].Code != i {
			t.Errorf("code %d (loop %d, guard %#x) and its trace are not linked", i, c.Loop, c.Guard)
		}
	}

	loop := l.Codes[0]
	want := Code{Loop: 1, Name: "h;/tmp/pypyx/br.py:2-4~#12 FOR_ITER",
		Loc:   Location{Func: "h", File: "/tmp/pypyx/br.py", FirstLine: 2, Line: 4, Index: 12, Opcode: "FOR_ITER"},
		Start: 0x7f93819e2a00, End: 0x7f93819e2e7f, Block: 0x7f93819e2970, Ops: 0x7f93819e2a8b, Failures: 0x7f93819e2c90,
		Bootstrap: 0x7f93819e2a00, Time: 0x24ff38801f199, Line: 2, Trace: 0, Parent: -1}
	if loop != want {
		t.Errorf("loop 1:\n%+v\nwant\n%+v", loop, want)
	}
	if tr := l.Traces[0]; tr.Kind != "loop" || tr.Loop != 1 || tr.Name != want.Name || tr.NumOps != 120 || tr.Inputs != "[p0, p1]" {
		t.Errorf("loop 1's trace: %s %d %q, %d ops, inputs %q", tr.Kind, tr.Loop, tr.Name, tr.NumOps, tr.Inputs)
	}

	br := l.Codes[1]
	if !br.Bridge || br.Guard != 0x7f9381bab148 || br.Start != 0x7f93819e2f70 || br.End != 0x7f93819e3163 || br.Block != 0x7f93819e2f20 || br.Parent != 0 {
		t.Errorf("first bridge: %+v", br)
	}
	tr := l.Traces[br.Trace]
	if tr.Kind != "bridge" || tr.Guard != br.Guard || tr.NumOps != 47 || len(tr.Points) == 0 {
		t.Errorf("first bridge's trace: %s guard %#x, %d ops, %d merge points", tr.Kind, tr.Guard, tr.NumOps, len(tr.Points))
	}
	if op := tr.Ops[0]; op.Offset != 101 || op.Guard != 0x7f9381bc0fe0 || op.Point != -1 || !strings.HasPrefix(tr.Text[0], "guard_value(p1") {
		t.Errorf("first bridge's first op: %+v", op)
	}
	if _, ok := tr.PositionAt(105); ok {
		t.Error("code before the first merge point has a position")
	}
	if mp, ok := tr.PositionAt(113); !ok || l.Locations[mp.Loc].Line != 5 || l.Locations[mp.Loc].Opcode != "BINARY_MODULO" || mp.Depth != 0 {
		t.Errorf("position at +113: %+v %v, want line 5, BINARY_MODULO", mp, ok)
	}
	if mp, ok := tr.PositionAt(1 << 20); !ok || l.Locations[mp.Loc].Opcode != "FOR_ITER" {
		t.Errorf("position past the end: %+v %v, want the last merge point", mp, ok)
	}

	// Every bridge belongs to the loop holding its guard, through bridges
	// if need be: the bridge of guard 0x7f9381baba48 was compiled after
	// loop 8 but leaves loop 6.
	roots := map[uint64]int{0x7f9381bab148: 1, 0x7f9381bab190: 1, 0x7f9381bab028: 1, 0x7f9381bc0e00: 1, 0x7f9381bc1460: 6, 0x7f9381baba48: 6, 0x7f9381b32068: 8}
	for i, c := range l.Codes {
		r, ok := l.Root(i)
		if !ok {
			t.Errorf("code %d has no root", i)
			continue
		}
		if c.Bridge && l.Codes[r].Loop != roots[c.Guard] || !c.Bridge && r != i {
			t.Errorf("code %d (guard %#x) is rooted at loop %d", i, c.Guard, l.Codes[r].Loop)
		}
	}

	// Without Options.Ops the trace keeps its shape but not its text.
	slim := readFile(t, "testdata/bridges.log", Options{})
	if op := slim.Traces[1].Ops[0]; slim.Traces[1].Text != nil || op.Offset != 101 || len(slim.Traces[1].Ops) != len(tr.Ops) {
		t.Errorf("without Ops: %+v", op)
	}
}

// TestReadSeed002 reads seed 002's example: the times are hexadecimal, so
// loop1 ran 0x100 ticks and loop0 0x300.
func TestReadSeed002(t *testing.T) {
	log := `[100] {jit-profile-enter
loop1      # e.g. an entry bridge
[101] jit-profile-enter}
...
[200] {jit-profile-enter
loop0      # JUMP from loop1 to loop0
[201] jit-profile-enter}
...
[500] {jit-profile-exit
loop0      # e.g. because of a failing guard
[501] jit-profile-exit}
`
	l, err := Read(strings.NewReader(log), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []ProfileEvent{{Time: 0x100, Thread: -1, Name: "loop1", Line: 1}, {Time: 0x200, Thread: -1, Name: "loop0", Line: 5}, {Time: 0x500, Thread: -1, Exit: true, Name: "loop0", Line: 9}}
	if len(l.Profile) != len(want) {
		t.Fatalf("events %+v, want %+v", l.Profile, want)
	}
	for i := range want {
		if l.Profile[i] != want[i] {
			t.Errorf("event %d: %+v, want %+v", i, l.Profile[i], want[i])
		}
	}
}

func TestReadShapes(t *testing.T) {
	// A full log (PYPYLOG=:FILE) nests jit-backend-addr in other
	// sections, and jit-regalloc-stats repeats the "has address" line.
	full := `[1] {jit-backend
[2] {jit-regalloc-stats
Loop 9 (g;x.py:1-2~#0 JUMP) has address 0x9000 to 0x9100 (bootstrap 0x8f00)
[3] jit-regalloc-stats}
[4] {jit-backend-addr
Loop 2 (weird (name) ) has address 0x1000 to 0x1100 (bootstrap 0x0f80)
       frame size: 0x40
[5] jit-backend-addr}
[6] jit-backend}
[7] {jit-backend-addr
bridge out of Guard 0xabc has address 0x2000 to 0x2080
[8] jit-backend-addr}
[9] {jit-backend-addr
Loop -1 () has address 0x30ab to 0x3190 (bootstrap 0x3020)
       gc table: 0x3000
       function: 0x3020
            end: 0x31db
[a] jit-backend-addr}
`
	l, err := Read(strings.NewReader(full), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Codes) != 3 {
		t.Fatalf("codes %+v, want loop 2, one bridge and a callback", l.Codes)
	}
	// compile_tmp_callback's stubs, seen in pystone's log.
	if c := l.Codes[2]; c.Loop != -1 || c.Name != "" || c.Start != 0x3020 || c.End != 0x31db || c.Block != 0x3000 {
		t.Errorf("loop -1: %+v", c)
	}
	// Without function/end lines (older PyPys) the header's addresses
	// bound the code: a loop from its bootstrap.
	if c := l.Codes[0]; c.Loop != 2 || c.Name != "weird (name) " || c.Loc.Raw != c.Name || c.Start != 0x0f80 || c.End != 0x1100 || c.Block != 0x0f80 || c.Time != 4 {
		t.Errorf("loop 2: %+v", c)
	}
	if c := l.Codes[1]; !c.Bridge || c.Guard != 0xabc || c.Start != 0x2000 || c.End != 0x2080 || c.Parent != -1 || c.Trace != -1 {
		t.Errorf("bridge: %+v", c)
	}
	if _, ok := l.Root(1); ok {
		t.Error("a bridge whose guard is in no trace has a root")
	}

	// PYPYLOG=FILE logs section lines only: no codes, no traces.
	l, err = Read(strings.NewReader("[1] {jit-log-opt-loop\n[2] jit-log-opt-loop}\n[3] {jit-backend-addr\n[4] jit-backend-addr}\n"), Options{})
	if err != nil || len(l.Codes)+len(l.Traces) != 0 {
		t.Errorf("a log of section lines: %+v, %v", l, err)
	}
}

func TestReadErrors(t *testing.T) {
	addr := func(body string) string {
		return "[1] {jit-backend-addr\n" + body + "\n[2] jit-backend-addr}\n"
	}
	opt := func(body string) string {
		return "[1] {jit-log-opt-loop\n# Loop 1 (f) : loop with 2 ops\n" + body + "\n[2] jit-log-opt-loop}\n"
	}
	for _, tc := range []struct{ name, log, want string }{
		{"loop number", addr("Loop x (f) has address 0x1 to 0x2"), "line 2: a Loop line with a bad loop number"},
		{"loop shape", addr("Loop 1 f has address 0x1 to 0x2"), "line 2: a Loop line not in the form"},
		{"address", addr("Loop 1 (f) has address 0x1 to 2"), "line 2: a bad end address"},
		{"long address", addr("Loop 1 (f) has address 0x11111111111111111 to 0x2"), "line 2: a bad start address"},
		{"bootstrap", addr("Loop 1 (f) has address 0x1 to 0x2 (bootstrap 0xz)"), "line 2: a Loop line with a bad bootstrap address"},
		{"guard", addr("bridge out of Guard 12 has address 0x1 to 0x2"), "line 2: a bridge line with a bad guard"},
		{"field", addr("Loop 1 (f) has address 0x1 to 0x2\n  end: 17"), "line 3: a bad end address"},
		{"backwards", addr("Loop 1 (f) has address 0x10 to 0x20\n  function: 0x30"), "line 2: loop 1's code runs from 0x30 to 0x20"},
		{"huge", addr("Loop 1 (f) has address 0x10 to 0x20\n  end: 0x7fffffffffff"), "line 2: loop 1's code runs from 0x10 to 0x7fffffffffff"},
		{"merge point", opt("debug_merge_point(0, 'f')"), "line 3: a debug_merge_point not in the form"},
		{"trace header", "[1] {jit-log-opt-loop\n# Loop x : loop\n[2] jit-log-opt-loop}\n", "line 2: a loop trace header with a bad loop number"},
		{"profile", "[1] {jit-profile-enter\n[2] jit-profile-enter}\n", "line 1: jit-profile-enter names no loop or bridge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.log), Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrFormat) {
				t.Errorf("error %v, want one with %q wrapping ErrFormat", err, tc.want)
			}
		})
	}
}

// TestReadCut: a log cut inside a jit-backend-addr section keeps every
// code before it and says what it left out.
func TestReadCut(t *testing.T) {
	b, err := os.ReadFile("testdata/bridges.log")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	cut := strings.Index(s, "       function: 0x7f93819e3940") // loop 6's section
	l, err := Read(strings.NewReader(s[:cut+20]), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Codes) != 5 || !l.Cut {
		t.Errorf("%d codes, cut %v; want the 5 before the cut", len(l.Codes), l.Cut)
	}
	if ws := strings.Join(l.Warnings, "\n"); !strings.Contains(ws, "the log ends inside the jit-backend-addr section of line 324") || !strings.Contains(ws, "is cut short") {
		t.Errorf("warnings:\n%s", ws)
	}
}

func TestParseLocation(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Location
	}{
		{"f;/tmp/x.py:2-4~#12 FOR_ITER", Location{Func: "f", File: "/tmp/x.py", FirstLine: 2, Line: 4, Index: 12, Opcode: "FOR_ITER"}},
		{"<module>;/a:b;c.py:1-9~#0 LOAD_CONST", Location{Func: "<module>", File: "/a:b;c.py", FirstLine: 1, Line: 9, Index: 0, Opcode: "LOAD_CONST"}},
		{"<code object f. file 'x.py'. line 3> #12 FOR_ITER", Location{Func: "<code object f. file 'x.py'. line 3> #12 FOR_ITER", Raw: "<code object f. file 'x.py'. line 3> #12 FOR_ITER"}},
		{"f;x.py:a-4~#12 OP", Location{Func: "f;x.py:a-4~#12 OP", Raw: "f;x.py:a-4~#12 OP"}},
		{"f;x.py:1-4~#12", Location{Func: "f;x.py:1-4~#12", Raw: "f;x.py:1-4~#12"}},
	} {
		got := ParseLocation(tc.in, nil)
		if got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.in, got, tc.want)
		}
		if got.String() != tc.in {
			t.Errorf("%q prints as %q", tc.in, got.String())
		}
	}
}

// TestFlow reads where control goes in the real log: labels and the final
// jump of each trace, call_assembler's callee, and so which bridges are
// inner bridges (seed 002: they jump back to the loop they leave).
func TestFlow(t *testing.T) {
	l := readFile(t, "testdata/bridges.log", Options{})
	loop1 := l.Traces[l.Codes[0].Trace]
	if !slices.Equal(loop1.Labels, []uint64{140271513589568, 140271513589648}) || loop1.Jump != 140271513589648 || len(loop1.Calls) != 0 {
		t.Errorf("loop 1: labels %v jump %d calls %v", loop1.Labels, loop1.Jump, loop1.Calls)
	}
	var inner, outer []string
	names := l.Names()
	for i, c := range l.Codes {
		tr := l.Traces[c.Trace]
		switch {
		case !c.Bridge && c.Loop == 8:
			if !slices.Equal(tr.Calls, []int{6}) {
				t.Errorf("loop 8 calls %v, want loop 6 (call_assembler, twice)", tr.Calls)
			}
		case c.Bridge && l.Inner(i):
			inner = append(inner, names[i])
		case c.Bridge:
			outer = append(outer, names[i])
		}
		if l.Inner(i) != (c.Bridge && tr.Jump != 0) {
			t.Errorf("%s: inner %v, jump %d", names[i], l.Inner(i), tr.Jump)
		}
	}
	// Every bridge of this log that ends in a jump jumps back into its own
	// loop; the two that do not (loop 6's and the first of loop 8's) end
	// in a finish or guard and leave to the interpreter.
	if len(inner) != 5 || len(outer) != 2 {
		t.Errorf("inner bridges %q, others %q; want 5 and 2", inner, outer)
	}
	if names[1] != "h [bridge 1 of loop 1]" {
		t.Errorf("first bridge named %q", names[1])
	}
}

// TestKeep: what Keep keeps reads as the whole log does, and is smaller.
func TestKeep(t *testing.T) {
	b, err := os.ReadFile("testdata/bridges.log")
	if err != nil {
		t.Fatal(err)
	}
	noise := "[1] {gc-minor\nsomething the GC says\n[2] {gc-inner\n[3] gc-inner}\n[4] gc-minor}\n"
	log := []byte(noise + string(b) + noise + "[9] {jit-profile-enter\nLoop 1\n[a] jit-profile-enter}\n" + noise)
	k := Keep(log)
	if bytes.Contains(k, []byte("gc-minor")) || len(k) >= len(log) {
		t.Errorf("kept %d of %d bytes, the GC's sections among them", len(k), len(log))
	}
	whole, err := Read(bytes.NewReader(log), Options{Ops: true})
	if err != nil {
		t.Fatal(err)
	}
	part, err := Read(bytes.NewReader(k), Options{Ops: true})
	if err != nil {
		t.Fatal(err)
	}
	// Only the line numbers differ.
	for _, l := range []*Log{whole, part} {
		for i := range l.Codes {
			l.Codes[i].Line = 0
		}
		for i := range l.Traces {
			l.Traces[i].Line = 0
		}
	}
	if !reflect.DeepEqual(whole.Codes, part.Codes) || !reflect.DeepEqual(whole.Traces, part.Traces) || len(part.Profile) != 1 {
		t.Errorf("the kept log reads differently: %d codes, %d traces, %d events", len(part.Codes), len(part.Traces), len(part.Profile))
	}
}
