package record

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/perfdata"
)

func TestMain(m *testing.M) {
	// The runtime's poller opens descriptors on first use and keeps them;
	// use it once so they are not counted as leaks.
	if r, w, err := os.Pipe(); err == nil {
		_ = r.SetReadDeadline(time.Now())
		r.Close()
		w.Close()
	}
	before := countFDs()
	code := m.Run()
	if after := countFDs(); code == 0 && after > before {
		fmt.Fprintf(os.Stderr, "leaked file descriptors: %d before, %d after\n", before, after)
		code = 1
	}
	os.Exit(code)
}

func countFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		panic(err)
	}
	return len(ents)
}

// needRoot skips where kernel samples, -a and other users' processes are
// out of reach; on CI, which runs as root, it fails.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("this test needs root, which CI has")
	}
	t.Skip("needs root: system-wide recording and kernel samples")
}

// run records cfg into a file in a temp dir and returns its path.
func run(t *testing.T, ctx context.Context, cfg Config) (string, *Result) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jitprof.data")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := Run(ctx, f, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return path, res
}

// stopAfter returns a context that ends once n samples are in (CPU time
// the target really got, not wall time), and the Progress to pass.
func stopAfter(t *testing.T, n uint64) (context.Context, func(Progress)) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx, func(p Progress) {
		if p.Samples >= n {
			cancel()
		}
	}
}

type fileSummary struct {
	samples       uint64
	kernel        uint64
	lost          uint64
	pids, tids    map[uint32]bool
	mmaps         map[string]bool // filenames of MMAP and MMAP2 records
	buildIDs      map[string]bool
	firstSampleAt int // record index
	firstMmapAt   map[string]int
}

func summarize(t *testing.T, path string) fileSummary {
	t.Helper()
	f, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := fileSummary{pids: map[uint32]bool{}, tids: map[uint32]bool{}, mmaps: map[string]bool{},
		buildIDs: map[string]bool{}, firstSampleAt: -1, firstMmapAt: map[string]int{}}
	rs := f.Records()
	for i := 0; rs.Next(); i++ {
		switch r := rs.Record().(type) {
		case *perfdata.Sample:
			s.samples++
			s.pids[r.PID], s.tids[r.TID] = true, true
			if r.CPUMode() == perfdata.MiscKernel {
				s.kernel++
			}
			if s.firstSampleAt < 0 {
				s.firstSampleAt = i
			}
		case *perfdata.Mmap:
			s.mmaps[r.Filename] = true
			if _, ok := s.firstMmapAt[r.Filename]; !ok {
				s.firstMmapAt[r.Filename] = i
			}
		case *perfdata.Lost:
			s.lost += r.Lost
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if ids, err := f.Features.BuildIDs(); err == nil {
		for _, b := range ids {
			s.buildIDs[b.Filename] = true
		}
	}
	return s
}

var reportLine = regexp.MustCompile(`^\s*([0-9.]+)%\s+\[[.k]\]\s+(\S+)`)

// shareA returns work_a's part of work_a+work_b in perf report --sort sym;
// BusySource makes it about 1/3.
func shareA(t *testing.T, path string, reportArgs ...string) float64 {
	t.Helper()
	args := append([]string{"report", "-i", path, "--stdio", "--no-children", "--sort", "sym", "--force"}, reportArgs...)
	out := perftest.Run(t, perftest.Perf(t), args...)
	pct := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if m := reportLine.FindStringSubmatch(sc.Text()); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			pct[m[2]] += v
		}
	}
	a, b := pct["work_a"], pct["work_b"]
	if a+b < 50 {
		t.Fatalf("perf report on %s: work_a %.1f%% + work_b %.1f%% is not most of the profile:\n%s", path, a, b, out)
	}
	return a / (a + b)
}

// scriptShareA is work_a's share of the work_a and work_b samples of pid,
// as perf script reads them.
func scriptShareA(t *testing.T, path string, pid int) float64 {
	t.Helper()
	out := perftest.Run(t, perftest.Perf(t), "script", "-i", path, "--force", "-G", "-F", "pid,ip,sym")
	var a, b int
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != strconv.Itoa(pid) {
			continue
		}
		switch f[len(f)-1] {
		case "work_a":
			a++
		case "work_b":
			b++
		}
	}
	if a+b < 100 {
		t.Fatalf("perf script shows %d work_a and %d work_b samples of pid %d in %s; want hundreds", a, b, pid, path)
	}
	return float64(a) / float64(a+b)
}

func scriptCount(t *testing.T, path string) uint64 {
	t.Helper()
	out := perftest.Run(t, perftest.Perf(t), "script", "-i", path, "--force", "-G", "-F", "ip")
	return uint64(strings.Count(out, "\n"))
}

// TestCommandAgreesWithPerf records a command with a thread and a
// fork+exec child and checks perf reads it as it reads its own recording.
func TestCommandAgreesWithPerf(t *testing.T) {
	busy := perftest.Busy(t)
	for _, callchain := range []bool{false, true} {
		t.Run(fmt.Sprintf("g=%v", callchain), func(t *testing.T) {
			args := []string{busy, "150", "1", "1"}
			path, res := run(t, context.Background(), Config{Command: args, Freq: 4000, Callchain: callchain, Cmdline: []string{"test"}})
			if res.ExitStatus != 0 {
				t.Errorf("exit status %d", res.ExitStatus)
			}
			perfArgs := []string{"-F", "4000"}
			if callchain {
				perfArgs = append(perfArgs, "-g")
			}
			ref := perftest.Record(t, "perf.data", append(append(perfArgs, "--"), args...)...)

			s := summarize(t, path)
			// ~1.35 s of CPU at 4000 Hz; a loaded machine gives less.
			if s.samples < 1500 {
				t.Fatalf("%d samples; want at least 1500", s.samples)
			}
			if s.samples != res.Samples {
				t.Errorf("file has %d samples, Result says %d", s.samples, res.Samples)
			}
			if n := scriptCount(t, path); n != s.samples {
				t.Errorf("perf script printed %d samples, the file holds %d", n, s.samples)
			}
			// Main thread, second thread, exec'd child.
			if len(s.tids) < 3 || len(s.pids) < 2 {
				t.Errorf("samples from pids %v tids %v; want the child process and both threads", s.pids, s.tids)
			}
			if !s.buildIDs[busy] {
				t.Errorf("no build-id for %s in %v", busy, s.buildIDs)
			}
			got, want := shareA(t, path), shareA(t, ref)
			// Binomial noise on ~2000 samples is under 0.015; scheduling
			// on a loaded machine adds some.
			if math.Abs(got-want) > 0.05 || math.Abs(got-1.0/3) > 0.07 {
				t.Errorf("work_a's share: jitprof %.3f, perf %.3f; want both about 0.333", got, want)
			}
		})
	}
}

func TestExitStatus(t *testing.T) {
	_, res := run(t, context.Background(), Config{Command: []string{"sh", "-c", "exit 7"}})
	if res.ExitStatus != 7 {
		t.Errorf("exit status %d, want 7", res.ExitStatus)
	}
}

// startBusy starts the workload outside the recorder and waits until it
// runs its own code: its exec and dynamic loading are done once libc is
// mapped.
func startBusy(t *testing.T) *exec.Cmd {
	t.Helper()
	busy := perftest.Busy(t)
	cmd := exec.Command(busy, "1000000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	for {
		maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", cmd.Process.Pid))
		if bytes.Contains(maps, []byte(busy)) && bytes.Contains(maps, []byte("libc")) {
			return cmd
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPID records a process that was running, with its mappings, before
// recording began (they come from /proc), by pid and by thread id.
func TestPID(t *testing.T) {
	busy := perftest.Busy(t)
	for _, byTID := range []bool{false, true} {
		t.Run(fmt.Sprintf("tid=%v", byTID), func(t *testing.T) {
			cmd := startBusy(t)
			pid := cmd.Process.Pid
			ctx, progress := stopAfter(t, 800)
			cfg := Config{PIDs: []int{pid}, Progress: progress}
			if byTID {
				cfg.PIDs, cfg.TIDs = nil, []int{pid}
			}
			path, res := run(t, ctx, cfg)
			if res.ExitStatus != -1 {
				t.Errorf("exit status %d without a command", res.ExitStatus)
			}
			s := summarize(t, path)
			if s.samples < 800 || !s.pids[uint32(pid)] || len(s.pids) != 1 {
				t.Fatalf("%d samples from pids %v; want at least 800 from %d only", s.samples, s.pids, pid)
			}
			if at, ok := s.firstMmapAt[busy]; !ok || at > s.firstSampleAt {
				t.Errorf("the synthesized MMAP2 of %s is missing or after the first sample (%d, %d)", busy, at, s.firstSampleAt)
			}
			if !s.buildIDs[busy] {
				t.Errorf("no build-id for %s in %v", busy, s.buildIDs)
			}
			if a := shareA(t, path); math.Abs(a-1.0/3) > 0.07 {
				t.Errorf("work_a's share %.3f; want about 0.333", a)
			}
			if n := scriptCount(t, path); n != s.samples {
				t.Errorf("perf script printed %d samples, the file holds %d", n, s.samples)
			}
		})
	}
}

func TestSystemWide(t *testing.T) {
	needRoot(t)
	cmd := startBusy(t)
	ctx, progress := stopAfter(t, 4000) // ~1 s of two CPUs, half of it the workload
	path, _ := run(t, ctx, Config{SystemWide: true, Progress: progress})
	s := summarize(t, path)
	if !s.pids[uint32(cmd.Process.Pid)] {
		t.Fatalf("no samples of the busy process %d among %d samples", cmd.Process.Pid, s.samples)
	}
	if !s.mmaps["[kernel.kallsyms]_text"] {
		t.Error("no kernel MMAP")
	}
	// Other processes share the machine; look at the workload's part,
	// as perf script prints each sample's pid and symbol. (perf report
	// --pid once dropped every sample of such a file on a loaded CI run
	// while perf script showed them, so the check goes through script.)
	if a := scriptShareA(t, path, cmd.Process.Pid); math.Abs(a-1.0/3) > 0.07 {
		t.Errorf("work_a's share %.3f; want about 0.333", a)
	}
	if n := scriptCount(t, path); n != s.samples {
		t.Errorf("perf script printed %d samples, the file holds %d", n, s.samples)
	}
}

// TestLost makes the recorder a slow reader of a one-page ring and checks
// that every lost sample is counted, in the file and in the Result.
func TestLost(t *testing.T) {
	busy := perftest.Busy(t)
	cfg := Config{Command: []string{busy, "100"}, Pages: 1, Freq: 4000, Callchain: true}
	// ~56+ bytes a sample into 4 KiB: 50 ms of a stalled reader
	// overflows it many times over.
	cfg.Progress = func(Progress) { time.Sleep(50 * time.Millisecond) }
	path, res := run(t, context.Background(), cfg)
	if res.Lost == 0 {
		t.Fatal("no samples lost")
	}
	s := summarize(t, path)
	if s.lost != res.Lost {
		t.Errorf("LOST records sum to %d, Result says %d", s.lost, res.Lost)
	}
	if st := perftest.Stats(t, path); st["LOST"] == 0 {
		t.Errorf("perf report --stats shows no LOST records: %v", st)
	}
}

// memSink is a Sink that keeps the records it is given, encoded, and
// what it saw at the ends of rounds.
type memSink struct {
	raw, made [][]byte
	rounds    int
	rec       *Recorder
}

func (m *memSink) Raw(rec []byte) error {
	m.raw = append(m.raw, bytes.Clone(rec))
	return nil
}

func (m *memSink) Record(rec perfdata.Record) error {
	b, err := perfdata.AppendRecord(nil, rec)
	m.made = append(m.made, b)
	return err
}

func (m *memSink) EndRound(r *Recorder) error {
	m.rounds++
	m.rec = r
	return nil
}

func (m *memSink) Written() int64 {
	var n int64
	for _, b := range append(m.raw, m.made...) {
		n += int64(len(b))
	}
	return n
}

// testAttr is the attr of records the tests feed a Recorder: samples of
// ip, tid and time, every record with its tid and time.
var testAttr = &perfdata.Attr{
	Type: perfdata.TypeSoftware, SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime,
	Flags: perfdata.FlagSampleIDAll, Name: "cpu-clock",
}

// kernelRecord encodes rec as a ring buffer holds it (this test runs on
// little-endian machines, where that is perf.data's order).
func kernelRecord(t testing.TB, rec perfdata.Record) []byte {
	t.Helper()
	b, err := perfdata.AppendRecord(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mmapRec(pid uint32, time, start, end uint64, path string) *perfdata.Mmap {
	return &perfdata.Mmap{
		Common:   perfdata.Common{Misc: perfdata.MiscUser, Attr: testAttr, PID: pid, TID: pid, Time: time},
		Version2: true, PID: pid, TID: pid, Addr: start, Len: end - start, Prot: 5, Filename: path,
	}
}

func sampleRec(pid uint32, time, ip uint64) *perfdata.Sample {
	return &perfdata.Sample{Common: perfdata.Common{Misc: perfdata.MiscUser, Attr: testAttr, PID: pid, TID: pid, Time: time}, IP: ip}
}

// TestHits: the build-ids a recording lists are of the images samples
// hit, as the mappings stood at each sample's time, also when a
// mapping arrives after its sample within a round (another CPU's ring)
// and when a child hits what its parent mapped.
func TestHits(t *testing.T) {
	if !littleEndian() {
		t.Skip("the records are encoded little-endian, as perf.data holds them")
	}
	sink := &memSink{}
	r := newRecorder(testAttr, true)
	r.sink = sink
	recs := []perfdata.Record{
		mmapRec(1, 10, 0x1000, 0x3000, "/a"),
		mmapRec(1, 20, 0x2000, 0x2800, "/b"), // maps over the middle of /a
		sampleRec(1, 25, 0x2900),             // /a
		sampleRec(2, 60, 0x5800),             // /late, the parent's before the fork
		sampleRec(3, 60, 0x1000),             // an unknown process
		sampleRec(1, 60, 0x4000),             // nothing mapped
		&perfdata.Fork{Common: perfdata.Common{Attr: testAttr, PID: 2, TID: 2, Time: 50}, PID: 2, PPID: 1, TID: 2, PTID: 1},
		mmapRec(1, 40, 0x5000, 0x6000, "/late"), // drained after the FORK
		sampleRec(1, 70, 0x1100),                // /a
	}
	for _, rec := range recs {
		r.handle(kernelRecord(t, rec))
	}
	r.endRound()
	if r.err != nil {
		t.Fatal(r.err)
	}
	var got []string
	for path := range r.hits {
		got = append(got, path)
	}
	slices.Sort(got)
	if want := []string{"/a", "/late"}; !slices.Equal(got, want) {
		t.Errorf("hit images %v, want %v", got, want)
	}
	if r.samples != 5 || r.first != 25 || r.last != 70 {
		t.Errorf("%d samples from %d to %d, want 5 from 25 to 70", r.samples, r.first, r.last)
	}
	if len(sink.raw) != len(recs) || sink.rounds != 1 || sink.rec != r {
		t.Errorf("sink got %d records in %d rounds, want %d in 1, and the Recorder", len(sink.raw), sink.rounds, len(recs))
	}
	if m := r.Tracker().Lookup(2, 0x5800, 60, false); m == nil || m.Path != "/late" {
		t.Errorf("the Tracker says 2:0x5800 at 60 is %v, want /late", m)
	}
}

func littleEndian() bool { return binary.NativeEndian.Uint16([]byte{1, 0}) == 1 }

// TestWorkload records a target while a command runs beside it, as perf
// record -a -- sleep 1 does: the command's end ends the recording, and
// its exit status is passed on.
func TestWorkload(t *testing.T) {
	for _, systemWide := range []bool{true, false} {
		t.Run(fmt.Sprintf("system-wide=%v", systemWide), func(t *testing.T) {
			if systemWide {
				needRoot(t)
			}
			busy := startBusy(t)
			pid := busy.Process.Pid
			// The workload ends once the busy process has had 0.2 s more
			// of CPU time (20 ticks at USER_HZ 100), ~800 samples at
			// 4000 Hz, however loaded the machine: the samples it takes
			// before the workload starts (while /proc is read) are not
			// recorded, and a workload of wall time could end with few.
			wait := fmt.Sprintf(`cpu() { set -- $(cat /proc/%d/stat); echo $((${14} + ${15})); }
				want=$(($(cpu) + 20)); while [ $(cpu) -lt $want ]; do sleep 0.05; done; exit 3`, pid)
			cfg := Config{Command: []string{"sh", "-c", wait}}
			if systemWide {
				cfg.SystemWide = true
			} else {
				cfg.PIDs = []int{pid}
			}
			// The command ends the recording; the deadline only keeps a
			// failure from hanging the test.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			path, res := run(t, ctx, cfg)
			if ctx.Err() != nil {
				t.Fatal("the recording outlived its workload")
			}
			if res.ExitStatus != 3 {
				t.Errorf("exit status %d, want the workload's 3", res.ExitStatus)
			}
			s := summarize(t, path)
			if !s.pids[uint32(pid)] || s.samples < 200 {
				t.Fatalf("%d samples from pids %v; want hundreds, some of the busy process %d", s.samples, s.pids, pid)
			}
			if !systemWide && len(s.pids) != 1 {
				t.Errorf("samples of pids %v; -p %d records that one only", s.pids, pid)
			}
			if got := comms(t, path); systemWide != got["sleep"] {
				t.Errorf("the workload's exec of sleep recorded: %v, want %v (it is in the target only system-wide); %d records lost", got["sleep"], systemWide, s.lost)
			}
		})
	}
}

// comms returns the names COMM records give in the file at path.
func comms(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]bool{}
	for r := f.Records(); r.Next(); {
		if c, ok := r.Record().(*perfdata.Comm); ok {
			out[c.Comm] = true
		}
	}
	return out
}

// TestTracepoint records a tracepoint as perf does, every hit with its
// fields, and with the formats perf needs to read them: perf script
// must print each sample's fields.
func TestTracepoint(t *testing.T) {
	needRoot(t)
	cfg := Config{Event: "sched:sched_switch", Command: []string{"sh", "-c", "for i in 1 2 3 4 5 6 7 8; do sleep 0.01; done"}}
	path, _ := run(t, context.Background(), cfg)
	f, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := f.Attrs[0]
	if a.Freq() || a.SamplePeriod != 1 || a.SampleType&perfdata.SampleRaw == 0 {
		t.Errorf("attr: freq %v, period %d, sample_type %v; want period 1 with RAW", a.Freq(), a.SamplePeriod, a.SampleType)
	}
	td, err := f.Features.TracingData()
	if err != nil {
		t.Fatal(err)
	}
	if len(td.Systems) != 1 || td.Systems[0].Name != "sched" || !bytes.HasPrefix(td.Systems[0].Formats[0], []byte("name: sched_switch\n")) {
		t.Errorf("tracing data systems %+v; want sched_switch's format", td.Systems)
	}
	s := summarize(t, path)
	if s.samples < 8 {
		t.Fatalf("%d samples; the workload switches out at least 8 times", s.samples)
	}
	out := perftest.Run(t, perftest.Perf(t), "script", "-i", path)
	if n := strings.Count(out, "sched:sched_switch: prev_comm="); uint64(n) != s.samples {
		t.Errorf("perf script printed %d sched_switch samples with fields, the file holds %d:\n%s", n, s.samples, out)
	}
}

// TestBuildIDAsProcessUser: an image's build-id is read with the rights
// of the process seen to run it. A process in a mount namespace of its
// own can map its own file at the path of a root-only file on the host;
// root's recorder must then not read the host's file.
func TestBuildIDAsProcessUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reading with a process's user's rights is what root's recorder does")
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(perftest.Busy(t))
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "root-only")
	if err := os.WriteFile(secret, b, 0o700); err != nil {
		t.Fatal(err)
	}
	r := newRecorder(testAttr, true)
	r.sink = &memSink{}
	r.procs.Map(process.Mapping{PID: 1, Start: 0x1000, End: 0x2000, Path: secret, Exec: true})
	r.ids[1] = identity{linux.Identity{UID: 54321, GID: 54321}, true}
	r.hit(userIP{1, 0x1800, 0})
	if ids := r.buildIDs(); len(ids) != 0 {
		t.Errorf("build-ids of a root-only image a uid 54321 process ran: %v, want none", ids)
	}
	r.ids[1] = identity{linux.Identity{UID: 0, GID: 0}, true}
	delete(r.hits, secret)
	r.hit(userIP{1, 0x1800, 0})
	if ids := r.buildIDs(); len(ids) != 1 {
		t.Errorf("build-ids of the image root's process ran: %v, want one", ids)
	}
}

// TestSamplesBeforeBegin: the samples the events took while /proc was
// read, before sampling began, are not recorded, and the records that
// tell of processes are, whenever they came.
func TestSamplesBeforeBegin(t *testing.T) {
	if !littleEndian() {
		t.Skip("the records are encoded little-endian, as perf.data holds them")
	}
	sink := &memSink{}
	r := newRecorder(testAttr, true)
	r.sink = sink
	r.from = 100
	for _, rec := range []perfdata.Record{
		mmapRec(1, 10, 0x1000, 0x2000, "/a"),
		sampleRec(1, 50, 0x1100), // while /proc was read
		sampleRec(1, 100, 0x1200),
		sampleRec(1, 150, 0x1300),
	} {
		r.handle(kernelRecord(t, rec))
	}
	r.endRound()
	if len(sink.raw) != 3 || r.samples != 2 || r.first != 100 || r.last != 150 {
		t.Errorf("the sink got %d records, the recorder counted %d samples from %d to %d; want the mmap and 2 samples from 100 to 150", len(sink.raw), r.samples, r.first, r.last)
	}
	if m := r.Tracker().Lookup(1, 0x1100, 100, false); m == nil || m.Path != "/a" {
		t.Errorf("the mapping of /a, made while /proc was read, is not known: %v", m)
	}
}

// TestPollWait: the drain loop waits at most PollInterval (or
// Config.RoundEvery), less when the recording's end is nearer, so that a
// recording of a duration ends at it; and not at all once it has come.
func TestPollWait(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, c := range []struct {
		end  time.Time
		wait time.Duration
		over bool
	}{
		{time.Time{}, PollInterval, false},
		{now.Add(time.Second), PollInterval, false},
		{now.Add(30 * time.Millisecond), 30 * time.Millisecond, false},
		{now, 0, true},
		{now.Add(-time.Millisecond), 0, true},
	} {
		wait, over := pollWait(now, c.end, 0)
		if wait != c.wait || over != c.over {
			t.Errorf("end %v after now: wait %v, over %v; want %v, %v", c.end.Sub(now), wait, over, c.wait, c.over)
		}
	}
	// Longer rounds (Config.RoundEvery), still ending at the end.
	if wait, over := pollWait(now, time.Time{}, time.Second); wait != time.Second || over {
		t.Errorf("rounds of 1 s without an end: wait %v, over %v", wait, over)
	}
	if wait, over := pollWait(now, now.Add(300*time.Millisecond), time.Second); wait != 300*time.Millisecond || over {
		t.Errorf("rounds of 1 s, the end in 300 ms: wait %v, over %v", wait, over)
	}
}

// TestDurationSpan: a recording of a duration spans that duration, from
// when sampling began (after /proc is read, which takes longer than a
// short recording on a busy machine) to the end: late by no more than
// the drain loop's PollInterval, which once was how late its end was
// noticed. System-wide, every CPU takes samples all along (the idle
// task's too), so the first and last samples mark the span's ends to
// within a sampling period (0.25 ms).
func TestDurationSpan(t *testing.T) {
	needRoot(t)
	const d = 300 * time.Millisecond
	path, _ := run(t, context.Background(), Config{SystemWide: true, Duration: d})
	f, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var first, last uint64
	for rs := f.Records(); rs.Next(); {
		if s, ok := rs.Record().(*perfdata.Sample); ok {
			if first == 0 || s.Time < first {
				first = s.Time
			}
			last = max(last, s.Time)
		}
	}
	span := time.Duration(last - first)
	t.Logf("a recording of %v spans %v", d, span)
	if span < d-10*time.Millisecond || span > d+PollInterval {
		t.Errorf("a recording of %v spans %v; want %v to %v", d, span, d-10*time.Millisecond, d+PollInterval)
	}
}

// TestForgetExited: with ForgetExited, a process that exited is let go
// of forgetAfter later, not before (another CPU's samples may come
// late), and a pid forked anew meanwhile is the new process's, kept.
func TestForgetExited(t *testing.T) {
	if !littleEndian() {
		t.Skip("the records are encoded little-endian, as perf.data holds them")
	}
	r := newRecorder(testAttr, true)
	r.sink = &memSink{}
	r.forget = true
	common := func(pid uint32, tm uint64) perfdata.Common {
		return perfdata.Common{Attr: testAttr, PID: pid, TID: pid, Time: tm}
	}
	for pid := uint32(100); pid < 1100; pid++ {
		r.handle(kernelRecord(t, &perfdata.Fork{Common: common(pid, 10), PID: pid, PPID: 1, TID: pid, PTID: 1}))
		r.handle(kernelRecord(t, mmapRec(pid, 20, 0x1000, 0x2000, "/a")))
		r.handle(kernelRecord(t, &perfdata.Exit{Common: common(pid, 30), PID: pid, PPID: 1, TID: pid, PTID: 1}))
	}
	// pid 100 again: a new process, whose exit is yet to come.
	r.handle(kernelRecord(t, &perfdata.Fork{Common: common(100, 40), PID: 100, PPID: 1, TID: 100, PTID: 1}))
	r.handle(kernelRecord(t, mmapRec(100, 50, 0x5000, 0x6000, "/b")))
	now := time.Now()
	r.forgetExited(now)
	if n := len(r.procs.Processes()); n < 1000 {
		t.Fatalf("%d processes known at once; the 1000 that exited are kept for %v", n, forgetAfter)
	}
	r.forgetExited(now.Add(forgetAfter))
	procs := r.procs.Processes()
	if len(procs) != 1 || procs[0].PID != 100 {
		t.Errorf("%d processes known %v after the exits, want pid 100's new process", len(procs), forgetAfter)
	}
	if m := r.procs.Lookup(100, 0x5100, 60, false); m == nil || m.Path != "/b" {
		t.Errorf("pid 100's new mapping: %v", m)
	}
}
