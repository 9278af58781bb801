package record

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/pypylog"
)

// maxJITData bounds what one recording embeds: JIT data is usually a few
// MB, and a runaway map should cost a warning, not the disk.
const maxJITData = 512 << 20

// embedJITData sets jitprof's JIT data (internal/jitbundle) to go in the
// recording's event_types section, which every perf tool skips: who each
// recorded process that ran JIT code (anonymous executable memory, or a
// jitdump marker mapping) was, and copies of its JIT data files, so that
// reports name JIT code after /tmp is cleaned or on another machine, and
// judge files by the uid the process had. The files are streamed into
// the recording when the writer closes; done closes them after. It
// returns how many files it embedded and their bytes; problems go to
// notice.
func (s *fileSink) embedJITData(r *Recorder, pypyLog string, notice func(string)) (files int, size int64, done func()) {
	var procs []process.Process
	for _, p := range r.procs.Processes() {
		if runsJIT(p) {
			procs = append(procs, p)
		}
	}
	pids := make([]uint32, len(procs))
	var b jitbundle.Bundle
	left := int64(maxJITData)
	for i, p := range procs {
		pid := p.PID
		pids[i] = pid
		id := r.ids[pid]
		if id.known && id.StartTime != 0 {
			// Still running: who it is now, if it is the same process.
			if now, err := linux.Host.Identity(int(pid)); err == nil && now.StartTime == id.StartTime {
				id.Identity = now
			}
		}
		var known *linux.Identity
		if id.known {
			known = &id.Identity
			b.Processes = append(b.Processes, jitbundle.Process{PID: int(pid), NSPID: id.NSPID, UID: id.UID, GID: id.GID, StartTime: id.StartTime})
		}
		ap := anon.NewProcess(pid, p.Comm, execMappings(p.Mappings), known)
		ap.PyPyLog = pypyLog
		// Without a start time a live process with this pid may be
		// another one: its files are not looked for under its root.
		if ap.StartTime != 0 {
			ap.FillLive(linux.Host)
		}
		es, errs := anon.Collect(&ap, left)
		for _, err := range errs {
			if notice != nil {
				notice(err.Error())
			}
		}
		for _, e := range es {
			left -= e.Src.Len()
			size += e.Src.Len()
		}
		b.Files = append(b.Files, es...)
	}
	files = len(b.Files)
	done = func() { anon.CloseSources(b.Files) }
	b.Files = append(b.Files, s.tsc.entries(pids)...)
	if len(b.Processes) == 0 && len(b.Files) == 0 {
		return 0, 0, done
	}
	if _, err := jitbundle.Size(&b); err != nil {
		if notice != nil {
			notice(fmt.Sprintf("JIT data not embedded: %v", err))
		}
		return 0, 0, done
	}
	s.w.EventTypesFrom = func(w io.Writer) error {
		_, err := jitbundle.WriteTo(w, &b)
		return err
	}
	return files, size, done
}

// runsJIT reports whether a process mapped anonymous executable memory
// or a jitdump file, the marks of a JIT.
func runsJIT(p process.Process) bool {
	for _, m := range p.Mappings {
		if !m.Exec {
			continue
		}
		if m.Anon || strings.HasPrefix(filepath.Base(m.Path), "jit-") && strings.HasSuffix(m.Path, ".dump") {
			return true
		}
	}
	return false
}

// PyPyLogFile is the file PyPy logs to under env's PYPYLOG
// (pypylog.LogFile), relative to the working directory the command starts
// in, which is the recorder's. "" when there is none.
func PyPyLogFile(env []string) string {
	var v string
	for _, kv := range env {
		if val, ok := strings.CutPrefix(kv, "PYPYLOG="); ok {
			v = val // the last one wins: os/exec passes the last of duplicates
		}
	}
	v = pypylog.LogFile(v)
	if v == "" {
		return ""
	}
	if abs, err := filepath.Abs(v); err == nil {
		return abs
	}
	return v
}

// execMappings are the executable ones of ms: where JIT data is looked
// for.
func execMappings(ms []*process.Mapping) []*process.Mapping {
	var out []*process.Mapping
	for _, m := range ms {
		if m.Exec {
			out = append(out, m)
		}
	}
	return out
}
