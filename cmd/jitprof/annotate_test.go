package main

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/cli"
	"github.com/jitprof/jitprof/internal/perftest"
)

// annotated is one instruction line of annotate output, ours or perf's.
type annotated struct {
	pct  float64
	addr uint64
	text string
}

var annotateLine = regexp.MustCompile(`^\s*(\d+\.\d+)\s*:\s+([0-9a-f]+):\s+(.*)$`)

func parseAnnotate(t *testing.T, out string) []annotated {
	t.Helper()
	var insts []annotated
	for line := range strings.Lines(out) {
		m := annotateLine.FindStringSubmatch(strings.TrimRight(line, "\n"))
		if m == nil {
			continue
		}
		pct, _ := strconv.ParseFloat(m[1], 64)
		addr, _ := strconv.ParseUint(m[2], 16, 64)
		insts = append(insts, annotated{pct, addr, m[3]})
	}
	if len(insts) == 0 {
		t.Fatalf("no instruction lines in:\n%s", out)
	}
	return insts
}

// nmSymbol returns a symbol's address and size as nm reads them.
func nmSymbol(t *testing.T, bin, name string) (start, size uint64) {
	t.Helper()
	for line := range strings.Lines(perftest.Run(t, "nm", "-S", "--defined-only", bin)) {
		f := strings.Fields(line)
		if len(f) == 4 && f[3] == name {
			start, _ = strconv.ParseUint(f[0], 16, 64)
			size, _ = strconv.ParseUint(f[1], 16, 64)
			return start, size
		}
	}
	t.Fatalf("nm: no %s in %s", name, bin)
	return 0, 0
}

var jump = regexp.MustCompile(`^(j[a-z]+) 0x([0-9a-f]+)`)

// TestAnnotateBusy annotates work_a of a perf recording of the busy
// workload and holds it against the code and against perf annotate.
func TestAnnotateBusy(t *testing.T) {
	bin := perftest.Busy(t)
	data := perftest.Record(t, "perf.data", "-e", "cpu-clock", bin, "100")
	start, size := nmSymbol(t, bin, "work_a")

	out := filepath.Join(t.TempDir(), "annotate.txt")
	if err := runAnnotate([]string{"-i", data, "--stdio", "-o", out, "work_a"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !strings.Contains(text, "s += i * 0.5") {
		t.Errorf("work_a's source line is not interleaved:\n%s", text)
	}
	ours := parseAnnotate(t, text)

	sum := 0.0
	var loopStart, loopEnd uint64
	for _, in := range ours {
		sum += in.pct
		if in.addr < start || in.addr >= start+size {
			t.Errorf("%#x: %s is outside work_a [%#x, %#x)", in.addr, in.text, start, start+size)
		}
		// A loop closes with a conditional jump back.
		if m := jump.FindStringSubmatch(in.text); m != nil && m[1] != "jmp" {
			if to, _ := strconv.ParseUint(m[2], 16, 64); to < in.addr && to >= start {
				loopStart, loopEnd = to, in.addr
			}
		}
	}
	if math.Abs(sum-100) > 0.1 {
		t.Errorf("percentages sum to %.2f, want 100:\n%s", sum, text)
	}
	if loopEnd == 0 {
		t.Fatalf("no backward jump in work_a:\n%s", text)
	}
	hot := hottest(ours)
	for _, in := range hot {
		if in.addr < loopStart || in.addr > loopEnd {
			t.Errorf("hottest instruction %#x %s is outside the loop [%#x, %#x]:\n%s", in.addr, in.text, loopStart, loopEnd, text)
		}
	}

	// Without a symbol, every function with samples is annotated,
	// hottest first: work_b (two thirds of the time) before work_a,
	// whose annotation is the one above.
	all := filepath.Join(t.TempDir(), "all.txt")
	if err := runAnnotate([]string{"-i", data, "-o", all}); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(all)
	if err != nil {
		t.Fatal(err)
	}
	ia, ib := strings.Index(string(b), "<work_a>:"), strings.Index(string(b), "<work_b>:")
	if ia < 0 || ib < 0 || ib > ia || !strings.Contains(string(b), text) {
		t.Errorf("annotate without a symbol: work_b at %d, work_a at %d, work_a's annotation in it: %v",
			ib, ia, strings.Contains(string(b), text))
	}

	// perf reads the same samples, so its hottest instruction is ours;
	// a tie allows any of the tied.
	theirs := parseAnnotate(t, perftest.Run(t, perftest.Perf(t), "annotate", "--stdio", "-s", "work_a", "-i", data))
	ok := false
	for _, th := range hottest(theirs) {
		for _, in := range hot {
			ok = ok || th.addr == in.addr
		}
	}
	if !ok {
		t.Errorf("hottest instructions %+v, perf annotate's %+v", hot, hottest(theirs))
	}
}

// hottest returns the instructions with the highest percentage.
func hottest(insts []annotated) []annotated {
	var top []annotated
	for _, in := range insts {
		switch {
		case len(top) == 0 || in.pct > top[0].pct:
			top = []annotated{in}
		case in.pct == top[0].pct:
			top = append(top, in)
		}
	}
	return top
}

func TestAnnotateUsage(t *testing.T) {
	for _, args := range [][]string{{"a", "b"}, {"--asm-syntax", "plan9", "work_a"}} {
		if err := runAnnotate(args); err != cli.ErrUsage {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}
