package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFirstDiff(t *testing.T) {
	if d := FirstDiff("a\nb\nc", "a\nx\nc"); !strings.Contains(d, "line 2") || !strings.Contains(d, "- b") || !strings.Contains(d, "+ x") {
		t.Errorf("FirstDiff = %q", d)
	}
	if d := FirstDiff("a\nb", "a"); !strings.Contains(d, "2 lines wanted, 1 got") {
		t.Errorf("FirstDiff = %q", d)
	}
}

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	os.WriteFile(path, []byte("same\n"), 0o644)
	Check(t, path, []byte("same\n"))
	ft := &fakeT{TB: t}
	Check(ft, path, []byte("other\n"))
	if !ft.failed {
		t.Error("a differing output passed")
	}
}

type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Helper()               {}
