package perfevent

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseEvent(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "events/sched/sched_switch"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "events/sched/sched_switch/id"), []byte("316\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	roots := []string{filepath.Join(root, "missing"), root}
	tp := filepath.Join(root, "events/sched/sched_switch")
	sw, hw := uint32(unix.PERF_TYPE_SOFTWARE), uint32(unix.PERF_TYPE_HARDWARE)
	tests := []struct {
		spec string
		want Event
	}{
		{"", Event{Name: "cpu-clock", Type: sw, Config: unix.PERF_COUNT_SW_CPU_CLOCK}},
		{"task-clock", Event{Type: sw, Config: unix.PERF_COUNT_SW_TASK_CLOCK}},
		{"faults", Event{Type: sw, Config: unix.PERF_COUNT_SW_PAGE_FAULTS}},
		{"major-faults", Event{Type: sw, Config: unix.PERF_COUNT_SW_PAGE_FAULTS_MAJ}},
		{"cs", Event{Type: sw, Config: unix.PERF_COUNT_SW_CONTEXT_SWITCHES}},
		{"migrations", Event{Type: sw, Config: unix.PERF_COUNT_SW_CPU_MIGRATIONS}},
		{"dummy", Event{Type: sw, Config: unix.PERF_COUNT_SW_DUMMY}},
		{"cycles", Event{Type: hw, Config: unix.PERF_COUNT_HW_CPU_CYCLES}},
		{"branch-instructions", Event{Type: hw, Config: unix.PERF_COUNT_HW_BRANCH_INSTRUCTIONS}},
		{"ref-cycles", Event{Type: hw, Config: unix.PERF_COUNT_HW_REF_CPU_CYCLES}},
		{"r1a2b", Event{Type: unix.PERF_TYPE_RAW, Config: 0x1a2b}},
		{"cpu-clock:u", Event{Type: sw, ExcludeKernel: true, ExcludeHV: true}},
		{"cycles:k", Event{Type: hw, ExcludeUser: true, ExcludeHV: true}},
		{"cycles:uk", Event{Type: hw, ExcludeHV: true}},
		{"cycles:pp", Event{Type: hw, PreciseIP: 2}},
		{"cycles:upp", Event{Type: hw, ExcludeKernel: true, ExcludeHV: true, PreciseIP: 2}},
		{"r10:p", Event{Type: unix.PERF_TYPE_RAW, Config: 0x10, PreciseIP: 1}},
		{"sched:sched_switch", Event{Type: unix.PERF_TYPE_TRACEPOINT, Config: 316, TracepointDir: tp}},
		{"sched:sched_switch:k", Event{Type: unix.PERF_TYPE_TRACEPOINT, Config: 316, ExcludeUser: true, ExcludeHV: true, TracepointDir: tp}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := parseEvent(tt.spec, roots, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.Name == "" {
				tt.want.Name = tt.spec
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseEventErrors(t *testing.T) {
	tests := []struct {
		spec  string
		roots []string
		want  error // nil: any error
	}{
		{"cpu-cloc", nil, nil},
		{"rxyz", nil, nil},
		{"r", nil, nil},
		{"cycles:x", nil, nil},
		{"cycles:pppp", nil, nil},
		{"a:b:c:d", nil, nil},
		{"sched:nope", []string{"testdata-absent"}, ErrNotSupported},
		{"../x:y", []string{"/"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := parseEvent(tt.spec, tt.roots, nil)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestParseEventMountsTracefs checks that a tracepoint on a machine
// without tracefs mounted has it mounted where perf mounts it, and that
// the event says so; a failed mount gives both reasons.
func TestParseEventMountsTracefs(t *testing.T) {
	root := t.TempDir()
	mount := func(dir string) error {
		if dir != root {
			t.Errorf("mounted %s, want %s", dir, root)
		}
		tp := filepath.Join(dir, "events/sched/sched_switch")
		if err := os.MkdirAll(tp, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tp, "id"), []byte("7\n"), 0o644)
	}
	ev, err := parseEvent("sched:sched_switch", []string{root}, mount)
	if err != nil {
		t.Fatal(err)
	}
	if ev.MountedTracefs != root || ev.Config != 7 {
		t.Errorf("got %+v, want tracefs mounted at %s and id 7", ev, root)
	}
	ev, err = parseEvent("sched:sched_switch", []string{root}, mount)
	if err != nil || ev.MountedTracefs != "" {
		t.Errorf("second parse: %+v, %v; want no mount", ev, err)
	}

	refused := errors.New("operation not permitted")
	_, err = parseEvent("sched:sched_switch", []string{t.TempDir()}, func(string) error { return refused })
	if !errors.Is(err, refused) || !errors.Is(err, ErrNotSupported) {
		t.Errorf("failed mount: err = %v, want both the mount's error and ErrNotSupported", err)
	}
}

// TestTracepointAttr checks that a tracepoint samples every hit with its
// raw fields unless told a period or frequency, as perf record does.
func TestTracepointAttr(t *testing.T) {
	tp := Event{Type: unix.PERF_TYPE_TRACEPOINT, Config: 316}
	for _, c := range []struct {
		opts      Options
		sample    uint64
		freq, raw bool
	}{
		{Options{Event: tp}, 1, false, true},
		{Options{Event: tp, Period: 5}, 5, false, true},
		{Options{Event: tp, Freq: 100}, 100, true, true},
		{Options{Event: Event{Type: unix.PERF_TYPE_SOFTWARE}}, DefaultFreq, true, false},
	} {
		a := buildAttr(c.opts, true)
		if a.Sample != c.sample || (a.Bits&unix.PerfBitFreq != 0) != c.freq || (a.Sample_type&unix.PERF_SAMPLE_RAW != 0) != c.raw {
			t.Errorf("%+v: sample %d, freq %v, raw %v; want %d, %v, %v", c.opts, a.Sample,
				a.Bits&unix.PerfBitFreq != 0, a.Sample_type&unix.PERF_SAMPLE_RAW != 0, c.sample, c.freq, c.raw)
		}
	}
}
