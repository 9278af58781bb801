package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/perfdata"
)

// TestReportPerfSpellings runs report with perf report's spellings of
// its options: each must give what jitprof's own spelling gives.
func TestReportPerfSpellings(t *testing.T) {
	data, err := filepath.Abs("../../perfdata/testdata/callgraph.data")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	report := func(args ...string) string {
		t.Helper()
		out := filepath.Join(dir, "out.txt")
		if code := run(append([]string{"report", "-o", out}, args...), io.Discard); code != 0 {
			t.Fatalf("jitprof report %v: exit %d", args, code)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// Each spelling must make a difference to be tested by the file.
	if report("-i", data, "-g") == report("-i", data) || report("-i", data, "-s", "comm,dso,sym") == report("-i", data) ||
		report("-i", data, "--comms", "nobody") == report("-i", data) ||
		report("-i", data, "-g", "caller") == report("-i", data, "-g", "callee") ||
		report("-i", data, "-g") == report("-i", data, "-g", "none") {
		t.Fatal("-g or --sort changes nothing on the test file: it cannot tell the spellings apart")
	}
	if code := run([]string{"report", "-i", data, "-o", filepath.Join(dir, "x"), "-s", "socket"}, io.Discard); code != 2 {
		t.Errorf("report -s socket (a perf key jitprof lacks): exit %d, want 2", code)
	}
	for _, c := range []struct{ perf, ours []string }{
		{[]string{"--input", data}, []string{"-i", data}},
		{[]string{"-i", data, "-s", "comm,dso,sym"}, []string{"-i", data, "--sort", "comm,dso,sym"}},
		{[]string{"-i", data, "--stdio", "-n", "--show-nr-samples"}, []string{"-i", data}},
		{[]string{"-i", data, "--children"}, []string{"-i", data, "-g"}},
		{[]string{"-i", data, "-g", "none", "--no-children"}, []string{"-i", data}},
		{[]string{"-i", data, "--call-graph=graph,0.5,caller"}, []string{"-i", data, "-g", "caller"}},
		{[]string{"-i", data, "-g", "caller"}, []string{"-i", data, "-g=caller"}},
		{[]string{"-i", data, "-G"}, []string{"-i", data, "--inverted"}},
		{[]string{"-i", data, "-G"}, []string{"-i", data, "-g"}}, // caller order with children
		{[]string{"-i", data, "--no-children", "-g"}, []string{"-i", data, "--no-children", "--call-graph", "callee,0.5"}},
		{[]string{"-i", data, "-g", "graph,0.5,caller", "--max-stack", "127"}, []string{"-i", data, "-g"}},
		{[]string{"-i", data, "-c", "nobody"}, []string{"-i", data, "--comms", "nobody"}},
		{[]string{"-i", data, "-d", "busy2"}, []string{"-i", data, "--dsos", "/tmp/scratch/busy2"}},
		{[]string{"-i", data, "--comm", "busy2", "--pid", "0,22352"}, []string{"-i", data}},
		// Sort keys as perf spells them, prefixes as perf takes them.
		{[]string{"-i", data, "-s", "comm,dso,symbol"}, []string{"-i", data, "--sort", "comm,dso,sym"}},
		{[]string{"-i", data, "-s", "C,d,S"}, []string{"-i", data, "--sort", "comm,dso,sym"}},
		{[]string{"-i", data, "-s", "tgid,sym,sym"}, []string{"-i", data, "--sort", "pid,sym"}},
	} {
		if got, want := report(c.perf...), report(c.ours...); got != want {
			t.Errorf("report %v differs from report %v:\n%s\nwant\n%s", c.perf, c.ours, got, want)
		}
	}
}

// jitData writes a recording of one process with 3 samples in /bin/true
// and 7 in anonymous executable memory (JIT code no handler names).
func jitData(t *testing.T) string {
	t.Helper()
	a := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod,
		Flags:      perfdata.FlagSampleIDAll,
		IDs:        []uint64{1},
	}
	c := func(tm uint64) perfdata.Common {
		return perfdata.Common{Attr: a, PID: 4000000, TID: 4000000, Time: tm, Misc: perfdata.MiscUser}
	}
	recs := []perfdata.Record{
		&perfdata.Comm{Common: c(1), PID: 4000000, TID: 4000000, Comm: "jitapp"},
		&perfdata.Mmap{Common: c(2), PID: 4000000, TID: 4000000, Addr: 0x400000, Len: 0x10000, Filename: "/bin/true"},
		&perfdata.Mmap{Common: c(3), PID: 4000000, TID: 4000000, Addr: 0x7f0000000000, Len: 0x10000, Filename: "//anon"},
	}
	for i := range uint64(10) {
		ip := uint64(0x7f0000000100)
		if i < 3 {
			ip = 0x401000
		}
		recs = append(recs, &perfdata.Sample{Common: c(10 + i), IP: ip, Period: 1000})
	}
	return perftest.WriteData(t, []*perfdata.Attr{a}, recs, nil)
}

// TestReportLeftOutJIT: without --anon-samples the JIT samples are left
// out, and the header says how many, their share and the flag to add;
// JSON says it in its notes, and CSV stays CSV.
func TestReportLeftOutJIT(t *testing.T) {
	data := jitData(t)
	out := filepath.Join(t.TempDir(), "out")
	read := func(args ...string) string {
		t.Helper()
		if code := run(append([]string{"report", "-i", data, "-o", out}, args...), io.Discard); code != 0 {
			t.Fatalf("jitprof report %v: exit %d", args, code)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const note = "7 of 10 samples (70.00% of the event) are in JIT code (anonymous executable memory) and left out, so percentages are of the rest: add --anon-samples to include and name them"
	text := read()
	header, _, _ := strings.Cut(text, "\n#\n")
	if !strings.Contains(header+"\n", "# note: "+note+"\n") {
		t.Errorf("the header does not say what was left out:\n%s", text)
	}
	if !strings.HasSuffix(text, "# "+note+"\n") {
		t.Errorf("the report does not end saying what was left out:\n%s", text)
	}
	if all := read("--anon-samples"); strings.Contains(all, "left out") || !strings.Contains(all, "anon (tgid:4000000") {
		t.Errorf("with --anon-samples:\n%s", all)
	}
	var js struct{ Notes []string }
	if err := json.Unmarshal([]byte(read("--format", "json")), &js); err != nil || !slices.Equal(js.Notes, []string{note}) {
		t.Errorf("JSON notes %q, %v; want the note", js.Notes, err)
	}
	recs, err := csv.NewReader(strings.NewReader(read("--format", "csv"))).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Errorf("CSV: %d records, %v; want a header and one row", len(recs), err)
	}
}

// TestReportPprofTerminal: --format pprof to a terminal is refused, as
// go tool pprof will not write one there either.
func TestReportPprofTerminal(t *testing.T) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	stdout := os.Stdout
	os.Stdout = tty
	defer func() { os.Stdout = stdout }()
	var stderr strings.Builder
	if code := run([]string{"report", "-i", jitData(t), "--format", "pprof"}, &stderr); code != 1 || !strings.Contains(stderr.String(), "not for a terminal: give -o FILE") {
		t.Errorf("--format pprof to a terminal: exit %d, %q", code, stderr.String())
	}
}
