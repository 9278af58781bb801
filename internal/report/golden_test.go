package report

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/jitprof/jitprof/internal/golden"
	"github.com/jitprof/jitprof/internal/profile/profiletest"
)

func TestGolden(t *testing.T) {
	cases := []struct {
		name string
		opts Options
	}{
		{"flat.dso.text", Options{}},
		{"flat.sym.text", Options{Sort: []string{KeyDSO, KeySym}}},
		{"flat.comm.pid.tid.sym.text", Options{Sort: []string{KeyComm, KeyPID, KeyTID, KeySym}}},
		{"flat.cpu.srcline.text", Options{Sort: []string{KeyCPU, KeySrcline}}},
		{"flat.sym.limit20.text", Options{Sort: []string{KeySym}, PercentLimit: 20}},
		{"callgraph.sym.text", Options{Sort: []string{KeySym}, Children: true}},
		{"flat.sym.json", Options{Sort: []string{KeyDSO, KeySym}, Format: JSON}},
		{"callgraph.json", Options{Sort: []string{KeyDSO, KeySym}, Children: true, Format: JSON}},
		{"flat.sym.csv", Options{Sort: []string{KeyDSO, KeySym}, Format: CSV}},
		{"callgraph.csv", Options{Sort: []string{KeyDSO, KeySym}, Children: true, Format: CSV}},
	}
	p := profiletest.Sample()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, p, c.opts); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", c.name), buf.Bytes())
		})
	}
	if err := Write(&bytes.Buffer{}, p, Options{Sort: []string{"bogus"}}); err == nil {
		t.Error("unknown sort key accepted")
	}
}
