package termtext

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"main", "main"},
		{"", ""},
		{"größe_π", "größe_π"},
		{"\x1b]0;owned\x07", `\x1b]0;owned\x07`},             // OSC 0: the window's title
		{"\x1b]52;c;aGk=\x07", `\x1b]52;c;aGk=\x07`},         // OSC 52: the clipboard
		{"x\x1b[2Jy", `x\x1b[2Jy`},                           // CSI 2J: clear the screen
		{"a\nb\tc\rd", `a\x0ab\x09c\x0dd`},                   // forged rows and columns
		{"del\x7f", `del\x7f`},                               // DEL
		{"c1 \u009b2J", `c1 \u009b2J`},                       // CSI as a C1 control
		{"evil\u202egnp.exe", `evil\u202egnp.exe`},           // right-to-left override
		{"bad \xff\xfe utf8 \xc3", `bad \xff\xfe utf8 \xc3`}, // not UTF-8
		{`already \x1b`, `already \x1b`},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestWriter: a stream keeps its newlines and tabs, whatever it is cut
// into, and escapes the rest as Escape does.
func TestWriter(t *testing.T) {
	in := "row\tgröße\x1b]0;t\x07\n\u009b\xffπ end\n"
	want := "row\tgröße\\x1b]0;t\\x07\n\\u009b\\xffπ end\n"
	for cut := range len(in) + 1 {
		var out bytes.Buffer
		w := NewWriter(&out)
		for _, part := range []string{in[:cut], in[cut:]} {
			if n, err := w.Write([]byte(part)); n != len(part) || err != nil {
				t.Fatalf("Write: %d, %v", n, err)
			}
		}
		w.Flush()
		if out.String() != want {
			t.Errorf("cut at %d: %q, want %q", cut, out.String(), want)
		}
	}
	// A character cut at the end, never finished, is flushed escaped.
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Write([]byte("x\xe2\x82"))
	if out.String() != "x" {
		t.Errorf("before Flush: %q", out.String())
	}
	w.Flush()
	if out.String() != `x\xe2\x82` {
		t.Errorf("after Flush: %q", out.String())
	}
}

// isClean says whether s holds nothing a terminal acts on (with layout,
// but newlines and tabs).
func isClean(s string, layout bool) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < ' ' && !(layout && (r == '\n' || r == '\t')) || r == 0x7f || escapedRune(r) {
			return false
		}
	}
	return true
}

func FuzzEscape(f *testing.F) {
	f.Add("main\x1b]0;x\x07", 3)
	f.Add("\u009b\u202e\xff\xe2\x82", 1)
	f.Fuzz(func(t *testing.T, s string, cut int) {
		e := Escape(s)
		if !isClean(e, false) {
			t.Fatalf("Escape(%q) = %q holds what a terminal acts on", s, e)
		}
		if isClean(s, false) != (e == s) {
			t.Fatalf("Escape(%q) = %q: clean input must come back as it is, and only that", s, e)
		}
		if Escape(e) != e {
			t.Fatalf("Escape is not idempotent on %q", s)
		}
		// Bytes that are not escapes come out as they went in.
		if strings.Count(e, `\`) < strings.Count(s, `\`) {
			t.Fatalf("Escape(%q) = %q lost a backslash", s, e)
		}
		var whole, parts bytes.Buffer
		w := NewWriter(&whole)
		w.Write([]byte(s))
		w.Flush()
		if !isClean(whole.String(), true) {
			t.Fatalf("Writer of %q wrote %q", s, whole.String())
		}
		if cut < 0 || cut > len(s) {
			cut = len(s) / 2
		}
		w = NewWriter(&parts)
		w.Write([]byte(s[:cut]))
		w.Write([]byte(s[cut:]))
		w.Flush()
		if parts.String() != whole.String() {
			t.Fatalf("Writer of %q cut at %d: %q, whole: %q", s, cut, parts.String(), whole.String())
		}
	})
}

func BenchmarkEscapeClean(b *testing.B) {
	s := "std::vector<int>::push_back(int const&) [clone .constprop.0]"
	b.ReportAllocs()
	for b.Loop() {
		Escape(s)
	}
}
