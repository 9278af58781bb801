package daemon

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/jitdump"
	"github.com/jitprof/jitprof/internal/perfmap"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/jitlog"
	"github.com/jitprof/jitprof/perfdata"
)

// ImportResult says what Import put into the session.
type ImportResult struct {
	Samples, Lost, Unresolved uint64
	Files                     int // sample files
	JITProcesses              int // processes whose JIT data came along
}

// Import puts a recording's samples into the session directory dir, as
// the daemon would have counted them (OProfile's way of keeping perf's
// and jitprof's recordings): into the current session, or, when session
// is not empty, into a new saved session of that name. The recording's
// embedded JIT data (jitprof record's) is the processes' JIT data:
// samples in JIT code are keyed by the sequence number of the code live
// at their time, and the data is copied into the session.
func Import(f *perfdata.File, dir, session string, sep sampledb.Separate) (ImportResult, error) {
	var res ImportResult
	if len(f.Attrs) == 0 {
		return res, errors.New("the recording has no events")
	}
	attr := f.Attrs[0]
	ev := sampledb.Event{Name: cmp.Or(attr.Name, "cpu-clock"), Count: attr.SamplePeriod, Freq: attr.Freq()}
	target := dir
	if session != "" {
		if err := sampledb.ValidSessionName(session); err != nil {
			return res, err
		}
		if _, err := os.Lstat(filepath.Join(dir, "samples", session)); err == nil {
			return res, fmt.Errorf("session %q exists", session)
		}
		// A session of its own, made aside and moved in whole.
		target = filepath.Join(dir, ".import-"+strconv.Itoa(os.Getpid()))
		defer os.RemoveAll(target)
	}
	db, err := sampledb.Create(target, sampledb.Options{Separate: sep, Events: []sampledb.Event{ev}})
	if err != nil {
		return res, err
	}
	bundle, err := jitbundle.Load(f)
	if err != nil {
		db.Close()
		return res, fmt.Errorf("jitprof's JIT data: %w", err)
	}
	procs := process.New()
	in := NewIngest(db, procs, 0)
	in.embedded = embeddedJIT(bundle, procs)
	r := f.Records()
	var pending []perfdata.Sample
	flushRound := func() {
		for i := range pending {
			in.Add(&pending[i])
		}
		pending = pending[:0]
		in.EndRound()
	}
	for r.Next() {
		switch rec := r.Record().(type) {
		case *perfdata.Sample:
			if rec.Attr != nil && rec.Attr != attr && len(f.Attrs) > 1 {
				continue // the first event's samples only
			}
			s := *rec
			s.Callchain = slices.Clone(rec.Callchain)
			pending = append(pending, s)
		case *perfdata.FinishedRound:
			flushRound()
		case *perfdata.Lost:
			res.Lost += rec.Lost
			db.AddLost(0, rec.Lost)
		case *perfdata.LostSamples:
			res.Lost += rec.Lost
			db.AddLost(0, rec.Lost)
		default:
			procs.Take(rec)
			in.Take(rec)
		}
	}
	flushRound()
	in.SaveJIT()
	st := db.Stats()
	res.Samples, res.Unresolved, res.Files, res.JITProcesses = st.Samples, in.Unresolved, st.Files, len(in.saved)
	err = errors.Join(r.Err(), db.Close())
	if err != nil || session == "" {
		return res, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "samples"), 0o700); err != nil {
		return res, err
	}
	return res, os.Rename(filepath.Join(target, "samples", sampledb.Current), filepath.Join(dir, "samples", session))
}

// embeddedJIT finds a process's JIT data in a recording's bundle, in the
// daemon's order of sources, and fills its code table from it.
func embeddedJIT(b *jitbundle.Bundle, procs *process.Tracker) func(j *jitProc) {
	files := map[int][]jitbundle.Entry{}
	who := map[int]jitbundle.Process{}
	if b != nil {
		for _, e := range b.Files {
			files[e.PID] = append(files[e.PID], e)
		}
		for _, p := range b.Processes {
			who[p.PID] = p
		}
	}
	return func(j *jitProc) {
		j.noFiles = true
		pid := int(j.pid)
		j.p.PID, j.p.NSPID, j.p.UID = pid, pid, trust.UnknownOwner
		j.p.Comm = procs.Comm(j.pid, j.pid, ^uint64(0))
		if p, ok := who[pid]; ok {
			j.p.UID, j.p.StartTime = p.UID, p.StartTime
			j.p.NSPID = cmp.Or(p.NSPID, pid)
		}
		for _, h := range jitHandlers {
			i := slices.IndexFunc(files[pid], func(e jitbundle.Entry) bool { return e.Kind == h })
			if i < 0 {
				continue
			}
			e := files[pid][i]
			if err := j.fill(h, e.Data); err != nil {
				j.err = err
				continue
			}
			j.handler, j.path, j.data, j.changed = h, e.Path, e.Data, true
			return
		}
	}
}

// fill fills the code table from a whole JIT data file of a recording.
func (j *jitProc) fill(handler string, data []byte) error {
	switch handler {
	case "jitlog":
		r, err := jitlog.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return err
		}
		for r.Next() {
			j.code.jitlogRecord(r.Record())
		}
		return nil
	case "jitdump":
		r, err := jitdump.NewReader(bytes.NewReader(data))
		if err != nil {
			return err
		}
		for r.Next() {
			j.code.jitdumpRecord(r.Record())
		}
		return nil
	case "perfmap":
		// One snapshot, the map as the recorder copied it: a range the
		// map names twice keeps the last name, as a report of the
		// recording does not (it says the range is ambiguous).
		m, err := perfmap.Options{Lenient: true}.Parse(bytes.NewReader(data))
		if err != nil {
			return err
		}
		j.ranges = map[perfmap.Symbol]uint64{}
		var out []byte
		for _, s := range m.Symbols {
			if s.Size == 0 {
				continue
			}
			s.Line = 0
			j.seq++
			j.ranges[s] = j.seq
			j.code.load(s.Start, s.Size, j.seq, 0)
			if out, err = j.appendRange(out, s, j.seq, 0); err != nil {
				return err
			}
		}
		j.pendingDump = out
		return nil
	}
	return fmt.Errorf("no JIT data of kind %q", handler)
}
