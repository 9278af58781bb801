package jitlog

import (
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/jitname"
)

// TestLongNamesAreCut: a code load may name its code with up to the
// record limit (64 MiB); readers keep jitname.Max bytes, marked as cut, of
// names and file names alike.
func TestLongNamesAreCut(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, Options{Dir: dir, Name: strings.Repeat("j", 5000)})
	long := strings.Repeat("n", 8<<20)
	if _, err := l.CodeLoad(0x1000, 1, long, &Load{Code: []byte{0xc3}, Files: []string{long}, Lines: []LineEntry{{0, 0, 1}}}); err != nil {
		t.Fatal(err)
	}
	path := l.Path()
	l.Close()
	recs, err := Read(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range recs {
		switch r := r.(type) {
		case *LoadRecord:
			names = append(names, r.Name, r.Files[0])
			if len(r.Code) != 1 || r.Code[0] != 0xc3 {
				t.Errorf("code %x after a long name", r.Code)
			}
		case *OpenRecord:
			names = append(names, r.Name)
		}
	}
	if len(names) != 3 {
		t.Fatalf("names %d, want a logger's, a load's and a file's", len(names))
	}
	for i, want := range []string{"...[name of 5000 bytes cut]", "...[name of 8388608 bytes cut]", "...[name of 8388608 bytes cut]"} {
		if n := names[i]; len(n) > jitname.Max || !strings.HasSuffix(n, want) {
			t.Errorf("name %d: %d bytes ending %q, want at most %d ending %q", i, len(n), n[max(0, len(n)-40):], jitname.Max, want)
		}
	}
}
