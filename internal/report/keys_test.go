package report

import (
	"errors"
	"slices"
	"testing"
)

func TestSortKey(t *testing.T) {
	for _, c := range []struct {
		names []string
		want  []string
	}{
		{nil, []string{KeyDSO}},
		{[]string{"symbol"}, []string{KeySym}},
		{[]string{"SYM"}, []string{KeySym}},
		{[]string{"s"}, []string{KeySym}},
		{[]string{"c", "cp", "d", "src", "p"}, []string{KeyComm, KeyCPU, KeyDSO, KeySrcline, KeyPID}},
		{[]string{"tgid", "tid", "app", "userapp"}, []string{KeyPID, KeyTID, KeyApp, KeyUserApp}},
		{[]string{"dso", "sym", "dso", "symbol"}, []string{KeyDSO, KeySym}},
		{[]string{"comm", "pid", "tid", "dso", "sym", "srcline", "cpu", "app", "userapp", "comm"}, []string{KeyComm, KeyPID, KeyTID, KeyDSO, KeySym, KeySrcline, KeyCPU, KeyApp, KeyUserApp}},
	} {
		got, err := SortKeys(c.names)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("SortKeys(%q) = %q, %v; want %q", c.names, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "bogus", "so", "parent", "t", "ti", "symbols", "ap"} {
		if k, err := SortKey(bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("SortKey(%q) = %q, %v; want ErrBadKey", bad, k, err)
		}
	}
}

// TestCSVCell: cells a spreadsheet would take for formulas are quoted,
// control bytes escaped, everything else kept.
func TestCSVCell(t *testing.T) {
	for in, want := range map[string]string{
		"main":                "main",
		"=1+2":                "'=1+2",
		"+cmd":                "'+cmd",
		"-2+3":                "'-2+3",
		"@SUM(A1)":            "'@SUM(A1)",
		"\t=1":                `\x09=1`, // escaped: no longer a tab
		"-":                   "-",      // no CPU
		"a=b":                 "a=b",
		"x\x1b]0;t\x07":       `x\x1b]0;t\x07`,
		"operator-(int)":      "operator-(int)",
		"[JIT perfmap] =evil": "[JIT perfmap] =evil",
	} {
		if got := csvCell(in); got != want {
			t.Errorf("csvCell(%q) = %q, want %q", in, got, want)
		}
	}
}
