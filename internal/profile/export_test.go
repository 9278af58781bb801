package profile_test

import (
	"bytes"
	"path/filepath"
	"testing"

	pprof "github.com/google/pprof/profile"

	"github.com/jitprof/jitprof/internal/golden"
	"github.com/jitprof/jitprof/internal/profile/profiletest"
)

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}

func TestFoldedGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := profiletest.Sample().WriteFolded(&buf, 0); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "sample.folded", buf.Bytes())
}

// TestPprofGolden writes the pprof export, reads it back with the pprof
// library and compares its text form.
func TestPprofGolden(t *testing.T) {
	pp, err := profiletest.Sample().Pprof(0)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := pp.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := pprof.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "sample.pprof.txt", []byte(back.String()))
}
