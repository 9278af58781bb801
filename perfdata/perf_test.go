package perfdata_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/perfdata"
)

type sampleKey struct {
	time, ip, period uint64
	pid, tid         uint32
}

type readResult struct {
	counts   map[string]uint64
	samples  map[int64]sampleKey
	chains   map[uint32][]int  // callchain lengths without context markers, by pid
	comms    map[uint32]string // each pid's last COMM
	warnings []string
}

func readFile(t *testing.T, path string) readResult {
	t.Helper()
	f, err := perfdata.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	res := readResult{counts: map[string]uint64{}, samples: map[int64]sampleKey{},
		chains: map[uint32][]int{}, comms: map[uint32]string{}}
	r := f.Records()
	for r.Next() {
		rec := r.Record()
		res.counts[rec.Type().String()]++
		res.counts["TOTAL"]++
		if c, ok := rec.(*perfdata.Comm); ok {
			res.comms[c.PID] = c.Comm
		}
		if s, ok := rec.(*perfdata.Sample); ok {
			off := s.Offset
			if f.PipeLayout {
				off -= f.DataOffset // perf counts a pipe's offsets from after its header
			}
			res.samples[off] = sampleKey{s.Time, s.IP, s.Period, s.PID, s.TID}
			n := 0
			for _, ip := range s.Callchain {
				if ip < perfdata.CallchainContextMax {
					n++
				}
			}
			res.chains[s.PID] = append(res.chains[s.PID], n)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	res.warnings = f.Warnings()
	return res
}

var dumpSample = regexp.MustCompile(`^(?:\d+ )?(\d+) (0x[0-9a-f]+) \[0x[0-9a-f]+\]: PERF_RECORD_SAMPLE\([^)]*\): (-?\d+)/(-?\d+): (0x[0-9a-f]+) period: (\d+)`)

// perfSamples returns the samples perf report -D prints, by file offset.
func perfSamples(t *testing.T, path string) map[int64]sampleKey {
	t.Helper()
	cmd := exec.Command(perftest.Perf(t), "report", "-D", "--force", "-i", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := map[int64]sampleKey{}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		mm := dumpSample.FindStringSubmatch(sc.Text())
		if mm == nil {
			continue
		}
		tm, _ := strconv.ParseUint(mm[1], 10, 64)
		off, _ := strconv.ParseInt(mm[2], 0, 64)
		pid, _ := strconv.ParseInt(mm[3], 10, 32)
		tid, _ := strconv.ParseInt(mm[4], 10, 32)
		ip, _ := strconv.ParseUint(mm[5], 0, 64)
		period, _ := strconv.ParseUint(mm[6], 10, 64)
		m[off] = sampleKey{tm, ip, period, uint32(pid), uint32(tid)}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("perf report -D %s: %v", path, err)
	}
	return m
}

func compareWithPerf(t *testing.T, path string, res readResult) {
	t.Helper()
	stats := perftest.Stats(t, path)
	for name, n := range stats {
		if res.counts[name] != n {
			t.Errorf("%s: %s records: we read %d, perf report --stats says %d", filepath.Base(path), name, res.counts[name], n)
		}
	}
	for name, n := range res.counts {
		if _, ok := stats[name]; !ok && n > 0 {
			t.Errorf("%s: we read %d %s records perf does not count", filepath.Base(path), n, name)
		}
	}
	ps := perfSamples(t, path)
	if len(ps) != len(res.samples) {
		t.Errorf("%s: perf report -D shows %d samples, we read %d", filepath.Base(path), len(ps), len(res.samples))
	}
	bad := 0
	for off, want := range ps {
		if got, ok := res.samples[off]; !ok || got != want {
			if bad++; bad <= 5 {
				t.Errorf("%s: sample at offset %#x: we read %+v, perf says %+v", filepath.Base(path), off, got, want)
			}
		}
	}
}

func TestReadAgreesWithPerf(t *testing.T) {
	busy := perftest.Busy(t)
	cases := []struct {
		name string
		args []string
	}{
		{"command", []string{"-e", "cpu-clock", "--", busy, "100"}},
		{"callgraph", []string{"-e", "cpu-clock", "-g", "--", busy, "100"}},
		{"threads-fork-exec", []string{"-e", "task-clock", "-g", "--", busy, "60", "2", "1"}},
		{"system-wide", []string{"-a", "-e", "cpu-clock", "-g", "--", busy, "100"}},
		{"period", []string{"-e", "cpu-clock", "-c", "100000", "--", busy, "100"}},
		{"two-events", []string{"-e", "cpu-clock", "-e", "task-clock", "-g", "--", busy, "100", "1"}},
		{"tracepoint", []string{"-e", "sched:sched_switch", "-a", "--", busy, "100", "2", "1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := perftest.Record(t, c.name+".data", c.args...)
			res := readFile(t, path)
			if res.counts["SAMPLE"] < 20 {
				t.Fatalf("only %d samples: the workload is too short to test anything", res.counts["SAMPLE"])
			}
			if len(res.warnings) != 0 {
				t.Errorf("warnings on a whole file: %v", res.warnings)
			}
			compareWithPerf(t, path, res)
			f, err := perfdata.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			checkResync(t, f, true)
			checkFixedFields(t, f)
			if c.name == "tracepoint" {
				// perf refuses tracepoints without their formats:
				// what it wrote must parse and encode back the same.
				raw, _ := f.Features.Raw(perfdata.FeatTracingData)
				td, err := f.Features.TracingData()
				if err != nil {
					t.Fatal(err)
				}
				if len(td.Systems) != 1 || td.Systems[0].Name != "sched" || len(td.Systems[0].Formats) != 1 ||
					!strings.HasPrefix(string(td.Systems[0].Formats[0]), "name: sched_switch\n") {
					t.Errorf("tracing data systems %+v; want sched with sched_switch's format", td.Systems)
				}
				if got := perfdata.AppendTracingData(nil, td); !bytes.Equal(got, raw) {
					t.Errorf("tracing data of %d bytes encodes back to %d other bytes", len(raw), len(got))
				}
			}
			if strings.Contains(strings.Join(c.args, " "), "-g") {
				// The workload's own samples: built with frame pointers,
				// each of its chains goes from the sampled function
				// through its caller. A system-wide recording also holds
				// whatever else ran (under a CPU hog most of its samples,
				// in code without frame pointers and chains of one
				// entry), which says nothing about -g.
				total, chains := 0, 0
				for pid, ns := range res.chains {
					if res.comms[pid] != "busy" {
						continue
					}
					for _, n := range ns {
						total += n
					}
					chains += len(ns)
				}
				if chains < 20 || total < 2*chains {
					t.Errorf("the workload's callchains average %d/%d entries: -g recorded no real chains", total, chains)
				}
			}
		})
	}
}

func TestReadPipeMode(t *testing.T) {
	busy := perftest.Busy(t)
	path := filepath.Join(t.TempDir(), "pipe.data")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(perftest.Perf(t), "record", "-q", "-o", "-", "-e", "cpu-clock", "-g", "--", busy, "100")
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("perf record -o -: %v\n%s", err, stderr.String())
	}
	out.Close()
	res := readFile(t, path)
	if res.counts["ATTR"] == 0 || res.counts["FEATURE"] == 0 {
		t.Errorf("pipe mode: %d ATTR and %d FEATURE records, want some of each", res.counts["ATTR"], res.counts["FEATURE"])
	}
	compareWithPerf(t, path, res)

	// The same stream through a pipe, as `perf record -o - | jitprof ...`.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pf, err := perfdata.NewStream(struct{ *os.File }{f})
	if err != nil {
		t.Fatal(err)
	}
	r := pf.Records()
	n := uint64(0)
	for r.Next() {
		n++
	}
	if r.Err() != nil || n != res.counts["TOTAL"] {
		t.Errorf("streaming read: %d records, err %v; want %d", n, r.Err(), res.counts["TOTAL"])
	}
	if host, err := pf.Features.String(perfdata.FeatHostname); err != nil || host == "" {
		t.Errorf("pipe-mode HOSTNAME feature: %q, %v", host, err)
	}
	if len(pf.Attrs) == 0 || pf.Attrs[0].Name != "cpu-clock" {
		t.Errorf("pipe-mode attrs %v: want one named cpu-clock", pf.Attrs)
	}
}

// TestReadKilledRecording kills perf record with SIGKILL. perf itself
// cannot read the result when the kill cut a record; we read every whole
// record, warn, and a copy written by our Writer is whole again for perf.
func TestReadKilledRecording(t *testing.T) {
	busy := perftest.Busy(t)
	path := filepath.Join(t.TempDir(), "killed.data")
	// A small ring (-m 8) makes perf write often; kill it once it wrote
	// enough to test, however loaded the machine is.
	cmd := exec.Command(perftest.Perf(t), "record", "-q", "-m", "8", "-o", path, "-e", "cpu-clock", "-g", "-F", "5000", "--", busy, "100000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if st, err := os.Stat(path); err == nil && st.Size() > 200<<10 {
			break
		}
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()

	f, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !f.Truncated {
		t.Fatalf("a killed recording's header has data size %d, want 0", f.DataSize)
	}
	repaired := filepath.Join(t.TempDir(), "repaired.data")
	n := copyFile(t, f, repaired, nil)
	if len(f.Warnings()) == 0 || !strings.Contains(f.Warnings()[0], "data size is 0") {
		t.Errorf("warnings %q: want one about the data size", f.Warnings())
	}
	if n["SAMPLE"] < 50 {
		t.Fatalf("read only %d samples from over 200 KiB of data", n["SAMPLE"])
	}
	compareWithPerf(t, repaired, readFile(t, repaired))
}

// copyFile reads every record of f and writes them with perfdata.Writer,
// with f's features plus extra, returning the record counts.
func copyFile(t *testing.T, f *perfdata.File, path string, eventTypes []byte) map[string]uint64 {
	return copyTo(t, f, path, eventTypes, false)
}

// copyTo is copyFile, writing perf's pipe mode when pipe is set.
// The copy's event_types section is eventTypes, or f's when that is nil.
func copyTo(t *testing.T, f *perfdata.File, path string, eventTypes []byte, pipe bool) map[string]uint64 {
	t.Helper()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var w *perfdata.Writer
	if pipe {
		w, err = perfdata.NewPipeWriter(out, f.Attrs)
	} else {
		w, err = perfdata.NewWriter(out, f.Attrs)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, feat := range f.Features.List() {
		b, _ := f.Features.Raw(feat)
		w.Features.SetRaw(feat, b)
	}
	w.EventTypes = f.EventTypes
	if eventTypes != nil {
		w.EventTypes = eventTypes
	}
	counts := map[string]uint64{}
	r := f.Records()
	for r.Next() {
		counts[r.Record().Type().String()]++
		if err := w.WriteRecord(r.Record()); err != nil {
			t.Fatalf("writing record at offset %d: %v", r.Offset(), err)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return counts
}
