package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

type reportRow struct {
	Keys        map[string]string
	Level       string // sym's [.] or [k]
	Samples     uint64
	SelfPercent float64 `json:"self_percent"`
}

// reportJSON runs jitprof report with args and returns the first event's rows.
func reportJSON(t *testing.T, args ...string) []reportRow {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.json")
	if err := runReport(append(args, "--format", "json", "-o", out)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Events []struct{ Rows []reportRow } }
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report JSON: %v\n%.500s", err, b)
	}
	if len(r.Events) == 0 {
		t.Fatalf("no events in %s", b)
	}
	return r.Events[0].Rows
}

// perfShares runs perf report --sort KEYS and returns the percentage of
// each row by its keys joined with "/".
func perfShares(t *testing.T, data, keys string) map[string]float64 {
	t.Helper()
	out := perftest.Run(t, perftest.Perf(t), "report", "--stdio", "-i", data, "--sort", keys, "-t", ";")
	m := map[string]float64{}
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimSpace(line), ";")
		if strings.HasPrefix(line, "#") || len(f) < 2 {
			continue
		}
		pct, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(f[0]), "%")), 64)
		if err != nil {
			continue
		}
		for i := range f[1:] {
			f[i+1] = strings.TrimSpace(f[i+1])
		}
		m[strings.Join(f[1:], "/")] += pct
	}
	return m
}

// TestSeparateLib records two copies of the busy workload under a shell
// and checks that --separate=kernel splits every image by the program
// that ran it as perf's comm,dso does, and that --separate=lib leaves the
// kernel's samples in one row of their own.
func TestSeparateLib(t *testing.T) {
	busy := perftest.Busy(t)
	dir := t.TempDir()
	b, err := os.ReadFile(busy)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"busy1", "busy2"} {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data := perftest.Record(t, "perf.data", "-e", "cpu-clock", "--", "sh", "-c", "cd "+dir+" && ./busy1 60 & cd "+dir+" && ./busy2 60; wait")

	perf := perfShares(t, data, "comm,dso")
	seen := map[string]bool{}
	for _, r := range reportJSON(t, "-i", data, "--separate=kernel") {
		app, dso := filepath.Base(r.Keys["app"]), filepath.Base(r.Keys["dso"])
		// A process's samples before its exec are the shell's in perf
		// (by comm) and in OProfile, so only user-space rows compare.
		if (app != "busy1" && app != "busy2") || dso == "[kernel.kallsyms]" {
			continue
		}
		seen[app] = true
		// The same samples as perf's, to its two decimals. A sample
		// in the shell's child between its fork and its exec (in
		// libc) is the shell's in perf, which gives a new thread its
		// parent's comm; it is the shell's in ours too.
		if want := perf[app+"/"+dso]; math.Abs(r.SelfPercent-want) > 0.01 {
			t.Errorf("%s / %s: %.2f%%, perf's %s,%s %.2f%%", r.Keys["app"], r.Keys["dso"], r.SelfPercent, app, dso, want)
		}
	}
	if !seen["busy1"] || !seen["busy2"] {
		t.Errorf("applications found: %v, want busy1 and busy2; perf: %v", seen, perf)
	}

	kernel := perfShares(t, data, "dso")["[kernel.kallsyms]"]
	got := 0.0
	for _, r := range reportJSON(t, "-i", data, "--separate=lib") {
		if r.Keys["dso"] != "[kernel.kallsyms]" {
			continue
		}
		if r.Keys["userapp"] != "[kernel.kallsyms]" {
			t.Errorf("kernel samples separated by %q without --separate=kernel", r.Keys["userapp"])
		}
		got += r.SelfPercent
	}
	if math.Abs(got-kernel) > 0.01 {
		t.Errorf("kernel: %.2f%%, perf %.2f%%", got, kernel)
	}
}
