package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/perfdata"
)

// perfTool is one way Linux perf reads a recording: args for the input
// (a path, or "-" with the stream on standard input) and a directory for
// what the tool writes.
type perfTool struct {
	name string
	args func(in, dir string) []string
	// pipe says whether perf reads streams with this tool at all.
	pipe bool
}

var perfTools = []perfTool{
	{"report", func(in, _ string) []string {
		return []string{"report", "-i", in, "--stdio", "-q", "--sort", "comm,dso,sym"}
	}, true},
	{"script", func(in, _ string) []string { return []string{"script", "-i", in} }, true},
	{"inject", func(in, dir string) []string {
		return []string{"inject", "-i", in, "-o", filepath.Join(dir, "injected.data")}
	}, true},
	{"inject --jit", func(in, dir string) []string {
		return []string{"inject", "--jit", "-i", in, "-o", filepath.Join(dir, "jit.data")}
	}, true},
	{"buildid-list", func(in, _ string) []string { return []string{"buildid-list", "-i", in} }, true},
	{"annotate", func(in, _ string) []string { return []string{"annotate", "-i", in, "--stdio"} }, true},
	{"archive", func(in, _ string) []string { return []string{"archive", in} }, false},
	{"diff", func(in, _ string) []string { return []string{"diff", in, in} }, false},
}

// TestPerfToolsTakeJITRecordings: every perf tool reads a jitprof
// recording that carries JIT data (here minijit's jitlog database,
// jitdump and perf map), in file and in pipe mode, as it reads the same
// recording without it: exit status 0, the same output and the same
// warnings. perf 6.1's inject used to die on feature bit 200.
func TestPerfToolsTakeJITRecordings(t *testing.T) {
	perf := perftest.Perf(t)
	jitprof, minijit := buildTools(t)
	data, env, _ := runMinijit(t, jitprof, minijit, "-jitdump", "-perfmap")
	dir := filepath.Dir(data)
	stream := filepath.Join(dir, "stream.data")
	rec := exec.Command(jitprof, "record", "-q", "-o", "-", "--", minijit, "-duration", "1s", "-quiet", "-jitdump", "-perfmap")
	rec.Env = env
	var streamBytes, stderr bytes.Buffer
	rec.Stdout, rec.Stderr = &streamBytes, &stderr
	if err := rec.Run(); err != nil {
		t.Fatalf("jitprof record -o -: %v\n%s", err, stderr.String())
	}
	if err := os.WriteFile(stream, streamBytes.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, f := range []string{data, stream} {
			for _, pid := range pidsOf(t, f, "minijit") {
				os.Remove(fmt.Sprintf("/tmp/perf-%d.map", pid))
			}
		}
	})

	for _, mode := range []struct {
		name string
		in   string
		pipe bool
	}{{"file", data, false}, {"pipe", stream, true}} {
		t.Run(mode.name, func(t *testing.T) {
			bundleFiles(t, mode.in, 3)
			twin := filepath.Join(t.TempDir(), "twin.data")
			if err := os.WriteFile(twin, withoutJITData(t, mode.in, mode.pipe), 0o600); err != nil {
				t.Fatal(err)
			}
			bundleFiles(t, twin, 0)
			for _, tool := range perfTools {
				if mode.pipe && !tool.pipe {
					continue // perf reads no stream with it, its own neither
				}
				ours := runPerf(t, perf, tool, mode.in, mode.pipe)
				theirs := runPerf(t, perf, tool, twin, mode.pipe)
				if ours.err != nil {
					t.Errorf("perf %s on a jitprof recording with JIT data: %v\n%s", tool.name, ours.err, ours.stderr)
					continue
				}
				if theirs.err != nil {
					t.Errorf("perf %s on the same recording without JIT data: %v\n%s", tool.name, theirs.err, theirs.stderr)
				}
				if ours.stderr != theirs.stderr {
					t.Errorf("perf %s warns of the JIT data:\n%s", tool.name, diffText(theirs.stderr, ours.stderr))
				}
				if ours.stdout != theirs.stdout {
					t.Errorf("perf %s prints something else with the JIT data:\n%s", tool.name, diffText(theirs.stdout, ours.stdout))
				}
			}
		})
	}
}

// tempVDSO is the temporary copy of the vDSO perf makes for each run.
var tempVDSO = regexp.MustCompile(`perf-vdso\.so-\w{6}`)

type perfRun struct {
	stdout, stderr string
	err            error
}

// runPerf runs tool on in, from a file or, in pipe mode, from standard
// input, in a directory of its own; in's path is "INPUT" in what it says.
func runPerf(t *testing.T, perf string, tool perfTool, in string, pipe bool) perfRun {
	t.Helper()
	dir := t.TempDir()
	// archive writes beside its input.
	local := filepath.Join(dir, "in.data")
	b, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(local, b, 0o600); err != nil {
		t.Fatal(err)
	}
	arg := local
	if pipe {
		arg = "-"
	}
	cmd := exec.Command(perf, tool.args(arg, dir)...)
	cmd.Dir = dir
	if pipe {
		cmd.Stdin = bytes.NewReader(b)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	clean := func(s string) string {
		s = strings.ReplaceAll(strings.ReplaceAll(s, local, "INPUT"), dir, "DIR")
		return tempVDSO.ReplaceAllString(s, "perf-vdso.so-XXXXXX")
	}
	return perfRun{clean(stdout.String()), clean(stderr.String()), err}
}

// bundleFiles checks that the recording at path carries want JIT data
// files.
func bundleFiles(t *testing.T, path string, want int) {
	t.Helper()
	f, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for r := f.Records(); r.Next(); {
		// A stream's event types come with its records.
	}
	b, err := jitbundle.Load(f)
	got := 0
	if b != nil {
		for _, e := range b.Files {
			if e.Kind != jitbundle.KindTSC { // the clock calibration is no file
				got++
			}
		}
	}
	if err != nil || got != want {
		t.Fatalf("%s carries %d JIT data files (%v), want %d", filepath.Base(path), got, err, want)
	}
}

// withoutJITData returns the recording at path without jitprof's data:
// a file with its event_types section emptied, a stream without its
// HEADER_EVENT_TYPE records; nothing else changes.
func withoutJITData(t *testing.T, path string, pipe bool) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if !pipe {
		// The event_types section's offset and size follow the magic,
		// header size, attr size, attrs and data sections.
		clear(b[56:72])
		return b
	}
	out := append([]byte(nil), b[:16]...)
	for off := 16; off < len(b); {
		if len(b)-off < 8 {
			t.Fatalf("%s: torn record at offset %d", path, off)
		}
		typ, size := perfdata.RecordType(le.Uint32(b[off:])), int(le.Uint16(b[off+6:]))
		n := size
		if typ == perfdata.RecordTracingData {
			n += int(le.Uint32(b[off+8:])) // its payload follows it
		}
		if size < 8 || n > len(b)-off {
			t.Fatalf("%s: bad record at offset %d", path, off)
		}
		if typ != perfdata.RecordHeaderEventType {
			out = append(out, b[off:off+n]...)
		}
		off += n
	}
	return out
}

// diffText shows the first lines where want and got differ.
func diffText(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out strings.Builder
	for i, shown := 0, 0; i < max(len(w), len(g)) && shown < 10; i++ {
		var x, y string
		if i < len(w) {
			x = w[i]
		}
		if i < len(g) {
			y = g[i]
		}
		if x != y {
			fmt.Fprintf(&out, "line %d:\n- %s\n+ %s\n", i+1, x, y)
			shown++
		}
	}
	return out.String()
}

// TestInjectJitNamesNode: perf inject --jit turns the jitdump node
// --perf-prof writes into an ELF file per function, and perf report of
// the result names the JIT code, for a jitprof recording as for perf's.
func TestInjectJitNamesNode(t *testing.T) {
	perf := perftest.Perf(t)
	node := perftest.Need(t, "node")
	jitprof := buildJitprof(t, t.TempDir())
	dir := t.TempDir()
	script := filepath.Join(dir, "fib.js")
	if err := os.WriteFile(script, []byte(perftest.NodeFib), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "perf.data")
	rec := exec.Command(jitprof, "record", "-q", "-o", data, "--", node, "--perf-prof", script)
	rec.Dir = dir // where node writes jit-PID.dump
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("jitprof record -- node --perf-prof: %v\n%s", err, out)
	}
	injected := filepath.Join(dir, "jit.data")
	perftest.Run(t, perf, "inject", "--jit", "-i", data, "-o", injected)
	out := perftest.Run(t, perf, "report", "-i", injected, "--stdio", "-q", "--sort", "dso,sym")
	named := regexp.MustCompile(`(?m)^\s+([0-9.]+)%\s+jitted-\d+-\d+\.so\s+\[\.\] \S*fib\b`)
	m := named.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("perf report after perf inject --jit names no fib in a jitted-*.so:\n%s", out)
	}
	t.Logf("fib in JIT code: %s%% of the samples", m[1])
}

// TestReadsBit200Recordings: recordings jitprof wrote before its JIT data
// moved to the event_types section carry it in feature bit 200; reports
// still name the JIT code from it after the files are gone.
func TestReadsBit200Recordings(t *testing.T) {
	perftest.Perf(t)
	jitprof, minijit := buildTools(t)
	data, env, truth := runMinijit(t, jitprof, minijit)
	old := filepath.Join(t.TempDir(), "old.data")
	writeBit200(t, data, old)
	bundleFiles(t, old, 1)
	sampled := sampledShares(t, jitprof, data, env)
	for _, e := range env {
		if dir, ok := strings.CutPrefix(e, "JITPROF_JITLOG_DIR="); ok {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkGenerations(t, jitprof, old, env, "[JIT jitlog]", truth, sampled, "--anon-samples")
}

// writeBit200 copies the recording at from to to as jitprof wrote it
// before: its JIT data files in jitbundle version 1, in feature bit 200.
func writeBit200(t *testing.T, from, to string) {
	t.Helper()
	f, err := perfdata.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := jitbundle.Load(f)
	if err != nil || b == nil {
		t.Fatalf("%s: no JIT data: %v", from, err)
	}
	le := binary.LittleEndian
	// Version 1 had no TSC calibration.
	files := slices.DeleteFunc(slices.Clone(b.Files), func(e jitbundle.Entry) bool { return e.Kind == jitbundle.KindTSC })
	v1 := le.AppendUint32(append([]byte(jitbundle.Magic), 1, 0, 0, 0), uint32(len(files)))
	for _, e := range files {
		v1 = le.AppendUint32(v1, uint32(e.PID))
		v1 = append(le.AppendUint16(v1, uint16(len(e.Kind))), e.Kind...)
		v1 = append(le.AppendUint16(v1, uint16(len(e.Path))), e.Path...)
		v1 = le.AppendUint64(v1, uint64(e.MTime))
		v1 = append(le.AppendUint64(v1, uint64(len(e.Data))), e.Data...)
	}
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := perfdata.NewWriter(out, f.Attrs)
	if err != nil {
		t.Fatal(err)
	}
	for _, feat := range f.Features.List() {
		raw, _ := f.Features.Raw(feat)
		w.Features.SetRaw(feat, raw)
	}
	w.Features.SetRaw(perfdata.FeatJitprof, v1)
	r := f.Records()
	for r.Next() {
		if err := w.WriteRecord(r.Record()); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
