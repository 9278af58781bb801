package kallsyms

import (
	"fmt"
	"strings"
	"testing"
)

// sample is a few lines as /proc/kallsyms prints them: aliases, a weak
// and a data symbol, module symbols after a tab.
const sample = "ffffffff81000000 T _stext\n" +
	"ffffffff81000000 T _text\n" +
	"ffffffff81001010 W arch_cpu_idle\n" +
	"ffffffff81002000 D some_data\n" +
	"ffffffff82276508 T _etext\n" +
	"ffffffffc0000000 t ext4_fill_super\t[ext4]\n" +
	"ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n"

func collect(text string) ([]Symbol, error) {
	var out []Symbol
	for s, err := range Symbols([]byte(text)) {
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	return out, nil
}

func TestSymbols(t *testing.T) {
	got, err := collect(sample + "\n  \n") // blank lines are skipped
	if err != nil {
		t.Fatal(err)
	}
	want := []Symbol{
		{0xffffffff81000000, 'T', "_stext", ""},
		{0xffffffff81000000, 'T', "_text", ""},
		{0xffffffff81001010, 'W', "arch_cpu_idle", ""},
		{0xffffffff81002000, 'D', "some_data", ""},
		{0xffffffff82276508, 'T', "_etext", ""},
		{0xffffffffc0000000, 't', "ext4_fill_super", "ext4"},
		{0xffffffffc0201000, 't', "ftrace_trampoline", "__builtin__ftrace"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	var text []bool
	for _, s := range got {
		text = append(text, s.Text())
	}
	if fmt.Sprint(text) != "[true true true false true true true]" {
		t.Errorf("Text() = %v", text)
	}
}

// TestErrors: a malformed line stops the walk with an error naming the
// line by number, without quoting it (a kallsyms file given with
// --kallsyms may be anything).
func TestErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ffffffff81000000 T\n", "line 1: want"},
		{"ffffffff81000000 T x\nsecret T x\n", "line 2: address"},
		{"ffffffff81000000 TT secret\n", "line 1: want"},
		{"1ffffffff81000000 T x\n", "line 1: address"},
	} {
		got, err := collect(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want one containing %q", tc.in, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error quotes the line: %v", tc.in, err)
		}
		if strings.Count(tc.in, "\n") == 2 && len(got) != 1 {
			t.Errorf("%q: %d symbols before the error, want 1", tc.in, len(got))
		}
	}
}

// TestStop: a caller that stops early (linux.KernelMapping, once it has found
// _text, _stext and _etext) is not yielded to again.
func TestStop(t *testing.T) {
	n := 0
	for range Symbols([]byte(sample)) {
		if n++; n == 2 {
			break
		}
	}
	if n != 2 {
		t.Errorf("%d symbols seen, want 2", n)
	}
}
