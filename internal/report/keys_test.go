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
