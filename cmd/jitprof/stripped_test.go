package main

import (
	"debug/elf"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

// miniDebugInfo strips bin and keeps the function symbols .dynsym lacks
// in an xz-compressed .gnu_debugdata section, as Fedora's find-debuginfo
// (add_minidebug) does.
func miniDebugInfo(t *testing.T, bin string) {
	t.Helper()
	nm, objcopy := perftest.Need(t, "nm"), perftest.Need(t, "objcopy")
	dir := t.TempDir()
	dynamic := map[string]bool{}
	for line := range strings.Lines(perftest.Run(t, nm, "-D", "--format=posix", "--defined-only", bin)) {
		dynamic[strings.Fields(line)[0]] = true
	}
	var keep []string
	for line := range strings.Lines(perftest.Run(t, nm, "--format=posix", "--defined-only", bin)) {
		f := strings.Fields(line)
		if (f[1] == "T" || f[1] == "t" || f[1] == "D") && !dynamic[f[0]] {
			keep = append(keep, f[0])
		}
	}
	slices.Sort(keep)
	keepFile, debug, mini := filepath.Join(dir, "keep_symbols"), filepath.Join(dir, "debuginfo"), filepath.Join(dir, "mini_debuginfo")
	if err := os.WriteFile(keepFile, []byte(strings.Join(keep, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	perftest.Run(t, objcopy, "--only-keep-debug", bin, debug)
	perftest.Run(t, objcopy, "-S", "--remove-section", ".gdb_index", "--remove-section", ".comment", "--keep-symbols="+keepFile, debug, mini)
	perftest.Run(t, perftest.Need(t, "xz"), "-9", mini)
	perftest.Run(t, perftest.Need(t, "strip"), "--strip-all", bin)
	perftest.Run(t, objcopy, "--add-section", ".gnu_debugdata="+mini+".xz", bin)
}

// TestStrippedMiniDebugInfo records the busy workload stripped to its
// MiniDebugInfo: work_a and work_b are in no symbol table but the one
// compressed in .gnu_debugdata, and report -l must name them with the
// shares perf gives them in a recording of the unstripped twin (perf 6.1
// as packaged here does not read .gnu_debugdata itself).
func TestStrippedMiniDebugInfo(t *testing.T) {
	perftest.Perf(t)
	dir := t.TempDir()
	bin, twin := filepath.Join(dir, "busy"), filepath.Join(dir, "twin")
	perftest.Run(t, perftest.Need(t, "gcc"), "-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-x", "c", "-o", bin, writeTemp(t, perftest.BusySource))
	perftest.Run(t, "cp", bin, twin)
	miniDebugInfo(t, bin)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	if f.Section(".symtab") != nil || f.Section(".debug_info") != nil || f.Section(".gnu_debugdata") == nil {
		t.Fatalf("%s: want no .symtab and no DWARF but .gnu_debugdata: the test proves nothing", bin)
	}
	f.Close()

	// -N keeps both out of perf's build-id cache: they share a build-id,
	// and a reader could find the twin's symbols under it.
	const iters = "200" // ≈ 2500 samples: shares to ±1 point
	data := perftest.Record(t, "perf.data", "-N", "-e", "cpu-clock", bin, iters)
	twinData := perftest.Record(t, "twin.data", "-N", "-e", "cpu-clock", twin, iters)
	ours := map[string]float64{}
	for _, r := range reportJSON(t, "-i", data, "-l") {
		if r.Keys["dso"] == bin {
			ours[r.Level+" "+r.Keys["sym"]] += r.SelfPercent
		}
	}
	a, b := ours["[.] work_a"], ours["[.] work_b"]
	// work_b runs twice the iterations of work_a.
	if a < 15 || b < 40 || math.Abs(b/(a+b)-2.0/3) > 0.2 {
		t.Errorf("work_a %.2f%%, work_b %.2f%%: want both named and about 1:2; all rows of %s: %v", a, b, bin, ours)
	}
	// Two runs differ by their sampling error and the machine's load: 6
	// points is several times what was seen.
	theirs := perfShares(t, twinData, "dso,sym")
	for _, fn := range []string{"work_a", "work_b"} {
		sym := "[.] " + fn
		if got, want := ours[sym], theirs["twin/"+sym]; math.Abs(got-want) > 6 {
			t.Errorf("%s: %.2f%% stripped, perf %.2f%% in the twin", fn, got, want)
		}
	}
}

func writeTemp(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "busy.c")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
