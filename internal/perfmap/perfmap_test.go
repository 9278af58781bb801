package perfmap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Symbol
		err  error // sentinel the strict error must wrap; nil for success
		line int   // line the error names
	}{
		{
			name: "v8 style",
			in:   "7f6d70005b80 100 JS:^fib /tmp/fib.js:1:13\n18c4000 300 Builtin:DeoptimizationEntry_Eager\n",
			want: []Symbol{
				{Start: 0x7f6d70005b80, Size: 0x100, Name: "JS:^fib /tmp/fib.js:1:13", Line: 1},
				{Start: 0x18c4000, Size: 0x300, Name: "Builtin:DeoptimizationEntry_Eager", Line: 2},
			},
		},
		{
			name: "0x prefixes and jvm names with spaces",
			in:   "0x7f00 0X20 Ljava/lang/String;::hashCode ()I\n",
			want: []Symbol{{Start: 0x7f00, Size: 0x20, Name: "Ljava/lang/String;::hashCode ()I", Line: 1}},
		},
		{
			name: "tabs, CRLF, blank lines, no final newline",
			in:   "\n10\t8\tfoo bar\r\n\n20 8 baz",
			want: []Symbol{
				{Start: 0x10, Size: 8, Name: "foo bar", Line: 2},
				{Start: 0x20, Size: 8, Name: "baz", Line: 4},
			},
		},
		{
			name: "same address twice keeps file order",
			in:   "1000 10 old\n1000 10 new\n",
			want: []Symbol{
				{Start: 0x1000, Size: 0x10, Name: "old", Line: 1},
				{Start: 0x1000, Size: 0x10, Name: "new", Line: 2},
			},
		},
		{name: "empty file", in: "", want: nil},
		{name: "missing name", in: "1000 10\n", err: ErrSyntax, line: 1},
		{name: "bad start", in: "ok 10 a\n1000 10 b\n", err: ErrSyntax, line: 1},
		{name: "bad size", in: "1000 10 a\n1000 zz b\n", err: ErrSyntax, line: 2},
		{name: "bare 0x", in: "0x 10 a\n", err: ErrSyntax, line: 1},
		{name: "start too big", in: "10000000000000000 1 a\n", err: ErrSyntax, line: 1},
		{name: "range wraps", in: "ffffffffffffffff 2 a\n", err: ErrSyntax, line: 1},
		{name: "torn last line", in: "1000 10 a\n2000 1", err: ErrTorn, line: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(strings.NewReader(tt.in))
			if tt.err != nil {
				var le *LineError
				if !errors.Is(err, tt.err) || !errors.As(err, &le) || le.Line != tt.line {
					t.Fatalf("Parse error = %v, want %v at line %d", err, tt.err, tt.line)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(m.Symbols, tt.want) {
				t.Errorf("Parse = %+v, want %+v", m.Symbols, tt.want)
			}
		})
	}
}

// TestErrorsQuoteNothing: a "map" may be any file a hostile user put in
// its place (a bind-mounted /etc/shadow); errors say where and why, never
// its bytes.
func TestErrorsQuoteNothing(t *testing.T) {
	const secret = "s3cr3tmarker"
	for _, in := range []string{
		"1000 10 ok\n" + secret + ":$6$x:19000:0:99999:7:::\n",
		"1000 10 ok\n1000 " + secret + " name\n",
		"1000 10 ok\n0x" + secret + "\n",
		"1000 10 ok\n" + strings.Repeat(secret, 500) + "\n",
		"1000 10 ok\n1000 " + secret, // torn
	} {
		_, err := Parse(strings.NewReader(in))
		var le *LineError
		if !errors.As(err, &le) || le.Line != 2 || le.Offset != int64(len("1000 10 ok\n")) {
			t.Errorf("%.40q: error %v, want one at line 2, offset 11", in, err)
		}
		if strings.Contains(fmt.Sprint(err), "s3cr3t") || !strings.Contains(fmt.Sprint(err), "line 2 (offset 11)") {
			t.Errorf("error %q quotes the file or does not say where", err)
		}
		m, err := Options{Lenient: true}.Parse(strings.NewReader(in))
		if err != nil || len(m.Errors) != 1 || strings.Contains(m.Errors[0].Error(), "s3cr3t") {
			t.Errorf("lenient: %v, %v", m, err)
		}
	}
}

func TestLenient(t *testing.T) {
	in := "1000 10 a\n" +
		"garbage\n" +
		strings.Repeat("x", 100) + "\n" +
		"2000 20 b\n" +
		"3000 3" // torn while the JIT was writing
	m, err := Options{Lenient: true, MaxLineLen: 64}.Parse(strings.NewReader(in))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(m.Symbols) != 2 || m.Symbols[0].Name != "a" || m.Symbols[1].Name != "b" || m.Symbols[1].Line != 4 {
		t.Errorf("Symbols = %+v, want a (line 1) and b (line 4)", m.Symbols)
	}
	wantErrs := []struct {
		line int
		err  error
	}{{2, ErrSyntax}, {3, ErrLineTooLong}, {5, ErrTorn}}
	if m.BadLines != len(wantErrs) || len(m.Errors) != len(wantErrs) {
		t.Fatalf("BadLines = %d, Errors = %v, want %d", m.BadLines, m.Errors, len(wantErrs))
	}
	for i, w := range wantErrs {
		if m.Errors[i].Line != w.line || !errors.Is(m.Errors[i], w.err) {
			t.Errorf("Errors[%d] = %v, want %v at line %d", i, m.Errors[i], w.err, w.line)
		}
	}
}

func TestLimits(t *testing.T) {
	long := "1000 10 " + strings.Repeat("n", 200) + "\n"
	_, err := Options{MaxLineLen: 100}.Parse(strings.NewReader("1 1 a\n" + long))
	var le *LineError
	if !errors.Is(err, ErrLineTooLong) || !errors.As(err, &le) || le.Line != 2 {
		t.Errorf("long line: err = %v, want ErrLineTooLong at line 2", err)
	}
	if _, err := (Options{MaxLineLen: 300}).Parse(strings.NewReader(long)); err != nil {
		t.Errorf("line under the limit: %v", err)
	}

	many := strings.Repeat("1000 10 a\n", 11)
	for _, lenient := range []bool{false, true} {
		_, err := Options{MaxSymbols: 10, Lenient: lenient}.Parse(strings.NewReader(many))
		if !errors.Is(err, ErrTooManyLines) {
			t.Errorf("lenient=%v: 11 symbols with limit 10: err = %v, want ErrTooManyLines", lenient, err)
		}
	}

	bad := strings.Repeat("junk\n", 50)
	m, err := Options{Lenient: true, MaxErrors: 3}.Parse(strings.NewReader(bad))
	if err != nil || len(m.Errors) != 3 || m.BadLines != 50 {
		t.Errorf("MaxErrors 3: err = %v, kept %d errors of %d bad lines", err, len(m.Errors), m.BadLines)
	}
}

func TestWriteRoundTrip(t *testing.T) {
	syms := []Symbol{
		{Start: 0x7f6d70005b80, Size: 0x100, Name: "JS:*fib /tmp/x y/fib.js:1:13"},
		{Start: 0, Size: 0, Name: "zero"},
		{Start: 0xffffffffffff0000, Size: 0xffff, Name: "Lfoo;::bar (I)V"},
		{Start: 0x1000, Size: 8, Name: "name\twith tab"},
	}
	var buf bytes.Buffer
	if err := Write(&buf, syms); err != nil {
		t.Fatalf("Write: %v", err)
	}
	m, err := Parse(&buf)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	for i := range syms {
		syms[i].Line = i + 1
	}
	if !reflect.DeepEqual(m.Symbols, syms) {
		t.Errorf("round trip = %+v, want %+v", m.Symbols, syms)
	}

	for _, name := range []string{"", "a\nb", " lead", "cr\r"} {
		if err := Write(&bytes.Buffer{}, []Symbol{{Start: 1, Size: 1, Name: name}}); !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrNameHasNewline) {
			t.Errorf("Write(name %q) err = %v, want a rejection", name, err)
		}
	}
}

func TestTestdata(t *testing.T) {
	f, err := os.Open("testdata/node20-fib.map")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := Parse(f)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	checkNodeMap(t, m, "fib.js")
}

// checkNodeMap asserts what every V8 map of the fib script holds:
// builtins, and an optimized (*) fib after its interpreted (~) one.
func checkNodeMap(t *testing.T, m *Map, script string) {
	t.Helper()
	var builtin, interp, opt int
	for _, s := range m.Symbols {
		switch {
		case strings.HasPrefix(s.Name, "Builtin:"):
			builtin++
		case strings.HasPrefix(s.Name, "JS:~fib ") && strings.Contains(s.Name, script):
			interp = s.Line
		case strings.HasPrefix(s.Name, "JS:*fib ") && strings.Contains(s.Name, script):
			opt = s.Line
		}
		if s.Size == 0 || s.Size > 1<<20 {
			t.Errorf("line %d: implausible size %#x", s.Line, s.Size)
		}
	}
	if builtin == 0 || interp == 0 || opt == 0 || opt < interp {
		t.Errorf("builtins %d, JS:~fib at line %d, JS:*fib at line %d: want builtins and ~fib before *fib", builtin, interp, opt)
	}
}

func TestNodePerfBasicProf(t *testing.T) {
	script, pid := perftest.Node(t, "--perf-basic-prof")
	mapPath := fmt.Sprintf("/tmp/perf-%d.map", pid)
	f, err := os.Open(mapPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := Parse(f)
	if err != nil {
		t.Fatalf("Parse %s: %v", mapPath, err)
	}
	checkNodeMap(t, m, script)
}

func FuzzParse(f *testing.F) {
	seed, err := os.ReadFile("testdata/node20-fib.map")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed, false)
	f.Add([]byte("0x10 0x8 a b\n20 1"), true)
	f.Add([]byte("1 2\n\n\r\nzz"), true)
	f.Fuzz(func(t *testing.T, in []byte, lenient bool) {
		opts := Options{Lenient: lenient, MaxLineLen: 128, MaxSymbols: 1000}
		m, err := opts.Parse(bytes.NewReader(in))
		if err != nil {
			return
		}
		for _, s := range m.Symbols {
			if s.Name == "" || s.End() < s.Start || s.Line < 1 {
				t.Fatalf("accepted bad symbol %+v", s)
			}
		}
		// What was accepted must write and read back the same.
		var buf bytes.Buffer
		if err := Write(&buf, m.Symbols); err != nil {
			t.Fatalf("Write of parsed symbols: %v", err)
		}
		m2, err := opts.Parse(&buf)
		if err != nil || len(m2.Symbols) != len(m.Symbols) {
			t.Fatalf("re-parse: %v, %d symbols, want %d", err, len(m2.Symbols), len(m.Symbols))
		}
		for i := range m.Symbols {
			a, b := m.Symbols[i], m2.Symbols[i]
			if a.Start != b.Start || a.Size != b.Size || a.Name != b.Name {
				t.Fatalf("symbol %d: %+v re-read as %+v", i, a, b)
			}
		}
	})
}

// FuzzParseLine: ParseLine takes a line as Parse takes it in a map.
func FuzzParseLine(f *testing.F) {
	f.Add([]byte("7f0000001000 40 LazyCompile:~fib /tmp/fib.js:1"))
	f.Add([]byte("0x10 0x8 a b\r"))
	f.Add([]byte("  \t"))
	f.Add([]byte("ffffffffffffffff 2 wrap"))
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return
		}
		sym, ok, err := ParseLine(line)
		m, perr := Options{}.Parse(bytes.NewReader(append(bytes.Clone(line), '\n')))
		switch {
		case err != nil:
			if perr == nil {
				t.Fatalf("ParseLine refused %q (%v), Parse took it", line, err)
			}
		case !ok:
			if perr != nil || len(m.Symbols) != 0 {
				t.Fatalf("ParseLine: %q is blank, Parse: %v, %d symbols", line, perr, len(m.Symbols))
			}
		default:
			if perr != nil || len(m.Symbols) != 1 || m.Symbols[0].Start != sym.Start || m.Symbols[0].Size != sym.Size || m.Symbols[0].Name != sym.Name {
				t.Fatalf("ParseLine(%q) = %+v, Parse: %v, %+v", line, sym, perr, m)
			}
		}
	})
}
