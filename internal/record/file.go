package record

import (
	"io"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/perfdata"
)

// fileSink is the Sink of Run: a perf.data file, or perf's pipe mode,
// that Linux perf reads, finished as perf record finishes one.
type fileSink struct {
	w       *perfdata.Writer
	inRound bool     // records came since the last FINISHED_ROUND
	tsc     tscClock // read at the start, and again at the end
}

// finishedRound is perf's PERF_RECORD_FINISHED_ROUND: a bare header.
var finishedRound = []byte{byte(perfdata.RecordFinishedRound), 0, 0, 0, 0, 0, 8, 0}

// newFileSink starts a perf.data of the events of attr in out, a file
// or, with pipe, a stream; tracing is the tracepoint formats, or nil.
func newFileSink(out io.Writer, pipe bool, attr *perfdata.Attr, tracing *perfdata.TracingData) (*fileSink, error) {
	var w *perfdata.Writer
	var err error
	if pipe {
		w, err = perfdata.NewPipeWriter(out, []*perfdata.Attr{attr})
	} else {
		w, err = perfdata.NewWriter(out.(io.WriteSeeker), []*perfdata.Attr{attr})
	}
	if err != nil {
		return nil, err
	}
	if tracing != nil {
		w.Features.SetTracingData(tracing)
	}
	return &fileSink{w: w, tsc: startTSC()}, nil
}

func (s *fileSink) Raw(rec []byte) error {
	s.inRound = true
	return s.w.WriteRaw(rec)
}

func (s *fileSink) Record(rec perfdata.Record) error { return s.w.WriteRecord(rec) }

// EndRound writes FINISHED_ROUND after a round of records, and flushes,
// which also keeps the header's data size current: a killed jitprof
// leaves a file perf reads to the last whole round.
func (s *fileSink) EndRound(*Recorder) error {
	if s.inRound {
		s.inRound = false
		if err := s.w.WriteRaw(finishedRound); err != nil {
			return err
		}
	}
	return s.w.Flush()
}

// Written is the size of the records written so far.
func (s *fileSink) Written() int64 { return s.w.DataSize() }

// finish completes the file: the header features perf record writes,
// the build-ids of the images samples hit, jitprof's JIT data; it
// returns how many build-ids and JIT data files (and their bytes) it
// wrote.
func (s *fileSink) finish(r *Recorder, cfg Config) (buildIDs, jitFiles int, jitBytes int64, err error) {
	s.setFeatures(r, cfg)
	ids := r.buildIDs()
	if len(ids) > 0 {
		s.w.Features.SetBuildIDs(ids)
	}
	var pypyLog string
	if len(cfg.Command) > 0 {
		pypyLog = PyPyLogFile(cfg.Env)
	}
	jitFiles, jitBytes, done := s.embedJITData(r, pypyLog, cfg.Notice)
	err = s.w.Close()
	done()
	return len(ids), jitFiles, jitBytes, err
}

// Size is the size of the file, or stream, written.
func (s *fileSink) Size() int64 { return s.w.Size() }

// setFeatures sets the header features perf report --header-only shows.
func (s *fileSink) setFeatures(r *Recorder, cfg Config) {
	fs := &s.w.Features
	if u, err := linux.ReadUname(); err == nil {
		fs.SetString(perfdata.FeatHostname, u.Hostname)
		fs.SetString(perfdata.FeatOSRelease, u.Release)
		fs.SetString(perfdata.FeatArch, u.Machine)
	}
	fs.SetString(perfdata.FeatVersion, "jitprof")
	if online, err := linux.OnlineCPUs(); err == nil {
		avail := len(online)
		if l, err := linux.PossibleCPUs(); err == nil {
			avail = len(l)
		}
		fs.SetNrCPUs(uint32(avail), uint32(len(online)))
	}
	if desc, id := linux.CPUInfo(); desc != "" {
		fs.SetString(perfdata.FeatCPUDesc, desc)
		if id != "" {
			fs.SetString(perfdata.FeatCPUID, id)
		}
	}
	if kB := linux.MemTotal(); kB > 0 {
		fs.SetTotalMem(kB)
	}
	if len(cfg.Cmdline) > 0 {
		fs.SetCmdline(cfg.Cmdline)
	}
	fs.SetEventDescs([]perfdata.EventDesc{{Attr: *r.attr, Name: r.attr.Name, IDs: r.attr.IDs}})
	clock := r.attr.ClockID
	var res unix.Timespec
	if unix.ClockGetres(clock, &res) == nil {
		fs.SetClockResolution(uint64(res.Nano()))
	}
	var wall, mono unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME, &wall) == nil && unix.ClockGettime(clock, &mono) == nil {
		fs.SetClockData(perfdata.ClockData{Version: 1, ClockID: uint32(clock), WallNS: uint64(wall.Nano()), ClockNS: uint64(mono.Nano())})
	}
	if r.samples > 0 && r.first > 0 {
		fs.SetSampleTime(r.first, r.last)
	}
}
