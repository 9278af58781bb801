package pathtime

import (
	"fmt"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/pypylog"
	"github.com/jitprof/jitprof/jitlog"
	"github.com/jitprof/jitprof/perfdata"
)

// Sampled are one process's samples of a recording.
type Sampled struct {
	PID     uint32
	Event   string // cpu-clock or task-clock
	Samples []Sample
}

// ReadSamples reads pid's cpu-clock or task-clock samples from a
// recording: their periods are nanoseconds on a CPU. Their times must
// be CLOCK_MONOTONIC, the clock of jitlog's times.
func ReadSamples(f *perfdata.File, pid uint32) (*Sampled, error) {
	out := &Sampled{PID: pid}
	ok := map[*perfdata.Attr]bool{}
	for _, a := range f.Attrs {
		if a.Type != perfdata.TypeSoftware || a.Config > 1 { // cpu-clock, task-clock
			continue
		}
		if a.Flags&perfdata.FlagUseClockID == 0 || a.ClockID != jitlog.ClockMonotonic || a.SampleType&perfdata.SampleTime == 0 {
			return nil, fmt.Errorf("its samples are not stamped with CLOCK_MONOTONIC, the clock of the JIT's log: record with jitprof record, or perf record -k mono")
		}
		ok[a] = true
		out.Event = map[uint64]string{0: "cpu-clock", 1: "task-clock"}[a.Config]
	}
	if len(ok) == 0 {
		return nil, fmt.Errorf("no cpu-clock or task-clock samples, whose periods are CPU time: record with -e cpu-clock")
	}
	r := f.Records()
	r.SkipCallchains = true
	for r.Next() {
		if s, is := r.Record().(*perfdata.Sample); is && s.PID == pid && ok[s.Attr] {
			out.Samples = append(out.Samples, Sample{Time: s.Time, Thread: uint64(s.TID), Period: s.Period, IP: s.IP})
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if len(out.Samples) == 0 {
		return nil, fmt.Errorf("no %s samples of pid %d, the JIT's: was it recorded while the JIT ran?", out.Event, pid)
	}
	return out, nil
}

// PyPyRecording is what accounting a PyPy log takes of a recording: the
// clock that puts the log's TSC stamps on the samples' clock, and the
// PyPy process's samples.
type PyPyRecording struct {
	Clock *pypylog.Clock
	*Sampled
}

// ReadPyPyRecording reads the TSC calibration a jitprof recording
// carries for pid (0: the one process that has one) and that process's
// samples.
func ReadPyPyRecording(f *perfdata.File, pid int) (*PyPyRecording, error) {
	b, err := jitbundle.Load(f)
	if err != nil {
		return nil, err
	}
	found := b.Entries(jitbundle.KindTSC, pid)
	switch {
	case len(found) == 0 && pid != 0:
		return nil, fmt.Errorf("no TSC calibration for pid %d, whose PyPy log is stamped with the TSC: record it with jitprof record", pid)
	case len(found) == 0:
		return nil, fmt.Errorf("no TSC calibration, which puts PyPy's TSC stamps on the samples' clock: record with jitprof record")
	case len(found) > 1:
		return nil, fmt.Errorf("%d processes have a TSC calibration: say which PyPy with -p PID", len(found))
	}
	clock, err := anon.TSCClock(found[0].Data)
	if err != nil {
		return nil, fmt.Errorf("pid %d: the TSC calibration: %w", found[0].PID, err)
	}
	s, err := ReadSamples(f, uint32(found[0].PID))
	if err != nil {
		return nil, err
	}
	return &PyPyRecording{Clock: clock, Sampled: s}, nil
}
