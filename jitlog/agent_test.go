package jitlog

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// buildAgent builds the C agent and its test programs into a temporary
// directory with make and gcc, which CI always has.
func buildAgent(t *testing.T, targets ...string) string {
	t.Helper()
	for _, tool := range []string{"make", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required in CI: %v", tool, err)
			}
			t.Skipf("no %s: %v", tool, err)
		}
	}
	out := t.TempDir()
	args := []string{"-s", "-C", "../agent", "OUT=" + out}
	for _, tg := range targets {
		args = append(args, filepath.Join(out, tg))
	}
	if b, err := exec.Command("make", args...).CombinedOutput(); err != nil {
		t.Fatalf("make %v: %v\n%s", args, err, b)
	}
	return out
}

// TestCAgent runs a small C JIT that logs through the agent, re-generating
// code at one address, and checks the database with the Go reader.
func TestCAgent(t *testing.T) {
	out := buildAgent(t, "libjitlog.so", "libjitlog.a", "testjit")
	dir := filepath.Join(t.TempDir(), "db")
	cmd := exec.Command(filepath.Join(out, "testjit"))
	cmd.Env = append(os.Environ(), EnvDir+"="+dir)
	lo := monoNow(t)
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("testjit: %v", err)
	}
	hi := monoNow(t)
	recs, err := Read(DatabasePath(dir, cmd.Process.Pid), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Enter and exit times, TSC-stamped where the TSC is usable, must
	// read as CLOCK_MONOTONIC ns like every other time.
	for _, r := range recs {
		switch r := r.(type) {
		case *EnterRecord:
			if r.Time < lo || r.Time > hi {
				t.Errorf("enter time %d outside the run [%d, %d]", r.Time, lo, hi)
			}
		case *ExitRecord:
			if r.Time < lo || r.Time > hi {
				t.Errorf("exit time %d outside the run [%d, %d]", r.Time, lo, hi)
			}
		}
	}
	loads := map[uint64]*LoadRecord{}
	var order []Record
	for _, r := range recs {
		if l, ok := r.(*LoadRecord); ok {
			if loads[l.Seq] != nil {
				t.Fatalf("seq %d twice", l.Seq)
			}
			loads[l.Seq] = l
		}
		if r.Kind() != KindCodeLoad || !strings.HasPrefix(r.(*LoadRecord).Name, "t") {
			order = append(order, r)
		}
	}
	if h := recs[0].(*Header); h.Seq != uint64(len(loads)) || h.PID != uint32(cmd.Process.Pid) {
		t.Errorf("header seq %d pid %d; %d loads, pid %d", h.Seq, h.PID, len(loads), cmd.Process.Pid)
	}
	addrs := map[uint64]bool{}
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	lines, tloads := 0, 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		lines++
		num := func(i, base int) uint64 {
			v, err := strconv.ParseUint(f[i], base, 64)
			if err != nil {
				t.Fatalf("testjit line %q: %v", sc.Text(), err)
			}
			return v
		}
		switch f[0] {
		case "load":
			seq, addr, size, ret := num(1, 10), num(2, 16), num(3, 10), uint32(num(5, 10))
			l := loads[seq]
			want := &LoadRecord{Seq: seq, Time: l.Time, Addr: addr, Size: size, Logger: 1, Name: f[4],
				Code: l.Code, Files: []string{"gen.c", "other.js"},
				Lines:    []LineEntry{{0, 0, ret}, {uint32(size) - 1, 1, ret + 1}},
				Bytecode: []BytecodeEntry{{0, 2 * ret}}}
			if !reflect.DeepEqual(l, want) || uint64(len(l.Code)) != size {
				t.Errorf("load %d:\n got %+v\nwant %+v", seq, l, want)
			}
			addrs[addr] = true
		case "tload":
			tloads++
			if l := loads[num(1, 10)]; l == nil || l.Name != f[2] || l.Size != 16 || l.Code != nil {
				t.Errorf("thread load %v: got %+v", f, l)
			}
		}
	}
	if tloads != 2000 || len(loads) != 2004 || lines != 2007 {
		t.Errorf("%d lines, %d thread loads, %d loads in the database", lines, tloads, len(loads))
	}
	if len(addrs) != 2 {
		t.Errorf("loads at %d addresses, want 2 (one reused)", len(addrs))
	}
	// Records other than the threads' loads, in file order, without times.
	// With the TSC, the agent logs two clock records at open and then
	// another whenever the TSC passes its next calibration point (200 µs
	// after open, then doubling), which Enter and Exit check: where those
	// fall depends on the machine's speed and load, not on what testjit
	// did. So only the two at open are in the order; the others are
	// checked to be clocks and left out of it.
	var kinds []string
	clocks := 0
	for _, r := range order {
		s := r.Kind().String()
		if c, ok := r.(*ClockRecord); ok {
			if clocks++; clocks > 2 {
				if c.TSC == 0 || c.Time == 0 {
					t.Errorf("clock record %+v: want a TSC and a time", c)
				}
				continue
			}
		}
		switch r := r.(type) {
		case *EnterRecord:
			if r.TID == 0 {
				t.Errorf("enter with no thread id")
			}
			s += fmt.Sprint(" ", r.Seq)
		case *LoadRecord:
			s += fmt.Sprint(" ", r.Seq)
		case *UnloadRecord:
			s += fmt.Sprint(" ", r.Seq)
		case *MoveRecord:
			s += fmt.Sprint(" ", r.Seq, " ", r.NewAddr == loads[1].Addr)
		case *OpenRecord:
			s += " " + r.Name
		case *UnwindRecord:
			s += fmt.Sprint(" ", r.Seq, " ", len(r.EHFrame), " ", string(r.EHFrame[9:11]))
		}
		kinds = append(kinds, s)
	}
	want := []string{"header", "logger-open testjit"}
	if tscUsable() {
		want = append(want, "clock", "clock")
	}
	want = append(want,
		"code-load 1", "region-enter 1", "region-exit",
		"code-load 2", "region-enter 2", "region-exit",
		"code-load 3", "region-enter 3", "region-exit",
		"code-unload 1",
		"code-load 4", "region-enter 4", "region-exit",
		"code-move 4 true",
		"code-unwind 4 24 zR",
		"logger-close")
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("records:\n got %q\nwant %q", kinds, want)
	}
}
