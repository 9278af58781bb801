package pypylog

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// events renders every event of a log, one per line, and the error.
func events(t *testing.T, log string, r io.Reader) (string, *Reader) {
	t.Helper()
	if r == nil {
		r = strings.NewReader(log)
	}
	rd := NewReader(r)
	var b strings.Builder
	for rd.Next() {
		e := rd.Event()
		switch e.Kind {
		case Text:
			fmt.Fprintf(&b, "%d text %q in %q depth %d\n", e.Line, e.Text, e.Section, e.Depth)
		default:
			fmt.Fprintf(&b, "%d %v %s %#x depth %d thread %d\n", e.Line, e.Kind, e.Section, e.Time, e.Depth, e.Thread)
		}
	}
	if err := rd.Err(); err != nil {
		fmt.Fprintf(&b, "error: %v\n", err)
	}
	return b.String(), rd
}

func TestReaderEvents(t *testing.T) {
	log := `top-level print
[1a] {outer
[1b] {inner
[p0, p1]
[2] two words}
[1c] inner}
[1f] outer}
0# [20] {threaded
1# [21] {other
text of thread 1
1# [22] other}
0# [23] threaded}
`
	got, rd := events(t, log, nil)
	want := `1 text "top-level print" in "" depth 0
2 start outer 0x1a depth 1 thread -1
3 start inner 0x1b depth 2 thread -1
4 text "[p0, p1]" in "inner" depth 2
5 text "[2] two words}" in "inner" depth 2
6 end inner 0x1c depth 2 thread -1
7 end outer 0x1f depth 1 thread -1
8 start threaded 0x20 depth 1 thread 0
9 start other 0x21 depth 1 thread 1
10 text "text of thread 1" in "other" depth 1
11 end other 0x22 depth 1 thread 1
12 end threaded 0x23 depth 1 thread 0
`
	if got != want {
		t.Errorf("events:\n%s\nwant:\n%s", got, want)
	}
	if rd.Cut() || len(rd.Warnings()) > 0 {
		t.Errorf("a whole log reads as cut: %v", rd.Warnings())
	}
	if first, last, ok := rd.Span(); !ok || first != 0x1a || last != 0x23 {
		t.Errorf("span %#x..%#x %v, want 0x1a..0x23", first, last, ok)
	}
}

// TestReaderShortReads: lines split across reads and a buffer that must
// grow give the same events.
func TestReaderShortReads(t *testing.T) {
	long := strings.Repeat("x", 3*bufSize)
	log := "[1] {a\n" + long + "\n[2] a}\n"
	got, _ := events(t, "", iotest.OneByteReader(strings.NewReader("[1] {a\nshort\n[2] a}\n")))
	if want := "1 start a 0x1 depth 1 thread -1\n2 text \"short\" in \"a\" depth 1\n3 end a 0x2 depth 1 thread -1\n"; got != want {
		t.Errorf("one byte at a time:\n%s\nwant:\n%s", got, want)
	}
	rd := NewReader(iotest.HalfReader(strings.NewReader(log)))
	var n int
	for rd.Next() {
		if e := rd.Event(); e.Kind == Text && len(e.Text) != len(long) {
			t.Errorf("long line of %d bytes read as %d", len(long), len(e.Text))
		}
		n++
	}
	if rd.Err() != nil || n != 3 {
		t.Errorf("%d events, error %v; want 3, none", n, rd.Err())
	}
}

func TestReaderErrors(t *testing.T) {
	for _, tc := range []struct {
		name, log, want string
	}{
		{"unmatched end", "[1] {a\n[2] {b\n[3] a}\n", "line 3: a section ends that is not the one open, from line 2"},
		{"end without start", "hello\n[3] a}\n", "line 2: a section ends, but none is open"},
		{"too deep", strings.Repeat("[1] {a\n", MaxDepth+1), fmt.Sprintf("line %d: sections nested more than %d deep", MaxDepth+1, MaxDepth)},
		{"too many threads", manyThreads(MaxThreads + 1), fmt.Sprintf("line %d: sections open in more than %d threads", MaxThreads+1, MaxThreads)},
		{"read error", "", "reading line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r io.Reader
			if tc.log == "" {
				r = iotest.ErrReader(errors.New("disk on fire"))
			}
			got, rd := events(t, tc.log, r)
			if !strings.Contains(got, tc.want) {
				t.Errorf("got:\n%s\nwant an error with %q", got, tc.want)
			}
			if tc.log != "" && !errors.Is(rd.Err(), ErrFormat) {
				t.Errorf("error %v does not wrap ErrFormat", rd.Err())
			}
		})
	}
}

// manyThreads is a log in which n threads each open a section.
func manyThreads(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%d# [%x] {gc-minor\n", i, i+1)
	}
	return b.String()
}

// TestReaderThreads: a thread's stack goes when its last section ends,
// so that a log of many threads, each with its sections closed (PyPy
// numbers threads as they start), keeps none; the sections of threads
// still open are kept and said, in the order of the threads.
func TestReaderThreads(t *testing.T) {
	var b strings.Builder
	const threads = 100_000 // 25 times MaxThreads
	for i := range threads {
		fmt.Fprintf(&b, "%d# [%x] {gc-minor\n%d# [%x] gc-minor}\n", i, 2*i+1, i, 2*i+2)
	}
	b.WriteString("7# [ffffff] {jit-a\n3# [ffffff] {jit-b\ntext\n")
	rd := NewReader(strings.NewReader(b.String()))
	n := 0
	for rd.Next() {
		n++
	}
	if rd.Err() != nil || n != 2*threads+3 {
		t.Fatalf("%d events, %v; want %d, no error", n, rd.Err(), 2*threads+3)
	}
	if got := len(rd.stacks); got != 2 {
		t.Errorf("%d stacks kept, want 2: the threads with a section open", got)
	}
	if e := rd.Event(); e.Kind != Text || e.Thread != 3 || e.Section != "jit-b" {
		t.Errorf("the last text is %+v, want thread 3's in jit-b", e)
	}
	w := rd.Warnings()
	if len(w) != 2 || !strings.Contains(w[0], "jit-b") || !strings.Contains(w[1], "jit-a") {
		t.Errorf("warnings %q, want thread 3's jit-b, then thread 7's jit-a", w)
	}
}

// TestReaderNeverQuotes: a bad line's bytes stay out of the message.
func TestReaderNeverQuotes(t *testing.T) {
	secret := strings.Repeat("S", MaxName+1)
	// Too long for a name, so this is text, and the section stays open.
	_, rd := events(t, "[1] {a\n[2] "+secret+"}\n", nil)
	for _, w := range rd.Warnings() {
		if strings.Contains(w, "SSSS") {
			t.Errorf("a warning quotes the log: %.80s", w)
		}
	}
	if !rd.Cut() {
		t.Error("a section never closed is not reported as cut")
	}
}

// TestReaderCut: a log cut short, as a killed PyPy leaves it, is read to
// the cut with warnings and no error.
func TestReaderCut(t *testing.T) {
	log := "[1] {jit-backend-addr\nLoop 1 (f) has address 0x10 to 0x20\n[2] jit-backend-addr}\n[3] {jit-log-opt-loop\n+12: i1 = int_add(i0, 1)\n[4] jit-log-o"
	got, rd := events(t, log, nil)
	if strings.Contains(got, "error") || strings.Count(got, "\n") != 5 {
		t.Errorf("events of a cut log:\n%s", got)
	}
	if !rd.Cut() || len(rd.Warnings()) != 2 {
		t.Fatalf("warnings %q, want the cut line and the open section", rd.Warnings())
	}
	if w := rd.Warnings()[0]; !strings.Contains(w, "line 6 is cut short after 13 bytes") {
		t.Errorf("warning %q", w)
	}
	if w := rd.Warnings()[1]; !strings.Contains(w, "1 open sections, the outermost jit-log-opt-loop from line 4") {
		t.Errorf("warning %q", w)
	}
}

func TestMarker(t *testing.T) {
	for _, tc := range []struct {
		line   string
		kind   Kind
		thread int
		time   uint64
		name   string
	}{
		{"[24feeffad89ee] {jit-backend-addr", Start, -1, 0x24feeffad89ee, "jit-backend-addr"},
		{"[24feeffaf547c] jit-backend-addr}", End, -1, 0x24feeffaf547c, "jit-backend-addr"},
		{"[FFFFFFFFFFFFFFFF] {a", Start, -1, 1<<64 - 1, "a"},
		{"12# [5] {gc-minor", Start, 12, 5, "gc-minor"},
		{"[10000000000000000] {a", Text, 0, 0, ""}, // 17 digits
		{"[] {a", Text, 0, 0, ""},
		{"[12]{a", Text, 0, 0, ""},
		{"[12] a", Text, 0, 0, ""},
		{"[12] {a b", Text, 0, 0, ""},
		{"[12] {", Text, 0, 0, ""},
		{"[12] }", Text, 0, 0, ""},
		{"[p0, p1]", Text, 0, 0, ""},
		{"1#[5] {a", Text, 0, 0, ""},
		{"+267: p2 = getfield_gc_r(p0)", Text, 0, 0, ""},
	} {
		thread, tm, name, kind := marker([]byte(tc.line))
		if kind != tc.kind || kind != Text && (thread != tc.thread || tm != tc.time || string(name) != tc.name) {
			t.Errorf("%q: %v thread %d %#x %q, want %v thread %d %#x %q", tc.line, kind, thread, tm, name, tc.kind, tc.thread, tc.time, tc.name)
		}
	}
}
