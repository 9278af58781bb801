package pypyview

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/pypylog"
)

// TestBuild charges samples placed at known operations of a real log
// (Debian's pypy3 7.3.11, testdata of internal/pypylog) and checks the
// counts, the bridges under their loop, and the operations marked.
func TestBuild(t *testing.T) {
	f, err := os.Open("../pypylog/testdata/bridges.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := pypylog.Read(f, pypylog.Options{Ops: true})
	if err != nil {
		t.Fatal(err)
	}
	loop, bridge := l.Codes[0], l.Codes[1]
	var samples []Sample
	add := func(n int, ip uint64) {
		for range n {
			samples = append(samples, Sample{IP: ip})
		}
	}
	add(30, loop.Block+340)  // in "+338: label(...)"
	add(10, loop.Block+769)  // "+769: jump(...)"
	add(6, bridge.Block+285) // the bridge's "+285: jump(...)"
	add(3, 0x1000)           // not JIT code
	add(1, l.Codes[9].Start) // the last bridge of loop 8: under the limit
	v, err := Build(l, samples, Options{MinPercent: 2.5})
	if err != nil {
		t.Fatal(err)
	}
	if v.Samples != 50 || v.InCode != 47 || v.Hidden != 1 || !v.Timeless || len(v.Loops) != 1 {
		t.Fatalf("view: %d samples, %d in code, %d hidden, timeless %v, %d loops", v.Samples, v.InCode, v.Hidden, v.Timeless, len(v.Loops))
	}
	e := v.Loops[0]
	if e.Name != "h [loop 1]" || e.Samples != 40 || e.Percent != 80 || e.Source != "/tmp/pypyx/br.py:4" || e.Kind != "loop" {
		t.Errorf("loop: %+v", e)
	}
	hot := map[string]uint64{}
	for _, op := range e.Ops {
		if op.Samples > 0 {
			hot[op.Text[:strings.Index(op.Text, "(")]] = op.Samples
		}
	}
	if len(hot) != 2 || hot["label"] != 30 || hot["jump"] != 10 {
		t.Errorf("hot operations %v, want label 30 and jump 10", hot)
	}
	if len(e.Bridges) != 1 || e.Bridges[0].Name != "h [bridge 1 of loop 1]" || e.Bridges[0].Samples != 6 || e.Bridges[0].Leaves != "h [loop 1]" || e.Bridges[0].Guard != bridge.Guard {
		t.Fatalf("bridges: %+v", e.Bridges)
	}

	var text bytes.Buffer
	if err := WriteText(&text, v, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`\s40\s+80\.00%\s+h \[loop 1\]\s+/tmp/pypyx/br\.py:4\s`, `\s6\s+12\.00%\s+h \[bridge 1 of loop 1\]\s`,
		`out of guard 0x7f9381bab148 of h \[loop 1\]`, `\s75\.00%\s+\+338:\s+label\(`} {
		if !regexp.MustCompile(want).MatchString(text.String()) {
			t.Errorf("text lacks %s:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, v); err != nil {
		t.Fatal(err)
	}
	var back View
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Loops) != 1 || back.Loops[0].Bridges[0].Samples != 6 {
		t.Errorf("JSON does not read back: %v\n%s", err, js.String())
	}
}
