package ingest

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/jitdump"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/pypylog"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/internal/unwind"
	"github.com/jitprof/jitprof/jitlog"
	"github.com/jitprof/jitprof/perfdata"
)

// ImportResult says what Import put into the session.
type ImportResult struct {
	Samples, Lost, Unresolved uint64
	Files                     int // sample files
	JITProcesses              int // processes whose JIT data came along
	// Unwound counts the chains unwound from user stacks (a recording
	// made with --call-graph dwarf), by how they ended.
	Unwound unwind.Stats
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
	root, err := trust.OpenOwnDir(dir, true)
	if err != nil {
		return res, fmt.Errorf("session directory: %w", err)
	}
	defer root.Close()
	aside := ".import-" + strconv.Itoa(os.Getpid())
	if session != "" {
		if err := sampledb.ValidSessionName(session); err != nil {
			return res, err
		}
		if _, err := root.Lstat(path.Join("samples", session)); err == nil {
			return res, fmt.Errorf("session %q exists", session)
		}
		// A session of its own, made aside and moved in whole.
		target = filepath.Join(dir, aside)
		defer root.RemoveAll(aside)
	}
	db, err := sampledb.Create(target, sampledb.Options{Separate: sep, Events: []sampledb.Event{ev},
		MaxFiles: DefaultMaxSampleFiles, MaxBytes: DefaultMaxSampleData})
	if err != nil {
		return res, err
	}
	bundle, err := jitbundle.Load(f)
	if err != nil {
		db.Close()
		return res, fmt.Errorf("jitprof's JIT data: %w", err)
	}
	procs := process.New()
	in := New(db, procs, 0)
	in.embedded = embeddedJIT(in, bundle, procs)
	// A recording with callchains, or with user stacks to unwind into
	// them (--call-graph dwarf), fills {cg} files, as the daemon with -g.
	in.CallGraph = attr.SampleType&perfdata.SampleCallchain != 0
	if attr.SampleType&(perfdata.SampleRegsUser|perfdata.SampleStackUser) == perfdata.SampleRegsUser|perfdata.SampleStackUser {
		in.CallGraph, in.Unwind = true, true
	}
	// The recording's rounds (FINISHED_ROUND, one a drain of the
	// recorder's) are counted as the daemon counts its drains.
	r := f.Records()
	for r.Next() {
		rec := r.Record()
		switch rec := rec.(type) {
		case *perfdata.Sample:
			if rec.Attr != nil && rec.Attr != attr && len(f.Attrs) > 1 {
				continue // the first event's samples only
			}
		case *perfdata.FinishedRound:
			in.Round(nil)
			continue
		}
		procs.Take(rec)
		in.Handle(rec)
	}
	in.Round(nil)
	in.SaveAllJIT()
	st := db.Stats()
	// The database counts arcs too: the samples are the Ingest's.
	res.Samples, res.Lost, res.Unresolved, res.Files, res.JITProcesses = in.Samples-in.Unresolved-in.Errors, in.Lost, in.Unresolved, st.Files, len(in.saved)
	res.Unwound = in.UnwindStats()
	err = errors.Join(r.Err(), db.Close())
	if err != nil || session == "" {
		return res, err
	}
	if err := root.Mkdir("samples", 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return res, err
	}
	return res, root.Rename(path.Join(aside, "samples", sampledb.Current), path.Join("samples", session))
}

// embeddedJIT finds a process's JIT data in a recording's bundle, in the
// daemon's order of sources, and fills its code table from it, within
// the bounds on JIT data.
func embeddedJIT(in *Ingest, b *jitbundle.Bundle, procs *process.Tracker) func(j *jitProc) {
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
		var known *linux.Identity
		if p, ok := who[pid]; ok {
			known = &linux.Identity{UID: p.UID, GID: p.GID, NSPID: p.NSPID, StartTime: p.StartTime}
		}
		j.p = anon.NewProcess(j.pid, procs.Comm(j.pid, j.pid, ^uint64(0)), nil, known)
		for _, h := range jitHandlers {
			i := slices.IndexFunc(files[pid], func(e jitbundle.Entry) bool { return e.Kind == h })
			if i < 0 {
				continue
			}
			e := files[pid][i]
			j.handler, j.path = h, e.Path
			if h == "pypy" {
				// The log's TSC stamps on the samples' clock, by the
				// recording's calibration.
				if k := slices.IndexFunc(files[pid], func(e jitbundle.Entry) bool { return e.Kind == jitbundle.KindTSC }); k >= 0 {
					j.clock, _ = anon.TSCClock(files[pid][k].Data)
				}
			}
			if err := j.fill(e.Data, in.room(j), func() (*os.Root, error) { return in.jitDir(j) }); err != nil {
				in.jitError(j, err)
				var b *errBound
				if !errors.As(err, &b) {
					j.handler, j.path, j.code, j.ranges, j.seq, j.pypy = "", "", codeTable{}, nil, 0, nil
					j.data, j.off, j.added = nil, 0, 0
					j.closeSession()
					continue
				}
				j.bound = err
			}
			return
		}
	}
}

// fill fills the code table from a whole JIT data file of a recording,
// of kind j.handler, within room: a jitdump or jitlog database is
// copied whole into the session (at the next save), a perf map or a PyPy
// log (the sections jitprof record kept of it) numbered as the daemon
// numbers one it reads.
func (j *jitProc) fill(data []byte, room jitRoom, session func() (*os.Root, error)) error {
	j.code.limit = max(room.entries, 1)
	j.code.tableLimit = room.tables
	switch j.handler {
	case "jitlog", "jitdump":
		if int64(len(data)) > room.bytes {
			return boundErr("%s: %s of JIT data, past %s", j.path, mib(int64(len(data))), room.bytesWhy)
		}
		j.data, j.off, j.added = data, int64(len(data)), int64(len(data))
	}
	switch j.handler {
	case "jitlog":
		r, err := jitlog.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return err
		}
		j.feed = feed(func() (jitlog.Record, bool) {
			if !r.Next() {
				return nil, false
			}
			return r.Record(), true
		}, func(rec jitlog.Record) uint64 {
			switch rec := rec.(type) {
			case *jitlog.LoadRecord:
				return rec.Time
			case *jitlog.MoveRecord:
				return rec.Time
			case *jitlog.UnloadRecord:
				return rec.Time
			}
			return 0
		}, j.code.jitlogRecord)
	case "jitdump":
		r, err := jitdump.NewReader(bytes.NewReader(data))
		if err != nil {
			return err
		}
		j.feed = feed(func() (jitdump.Record, bool) {
			if !r.Next() {
				return nil, false
			}
			return r.Record(), true
		}, func(rec jitdump.Record) uint64 { return rec.Header().Timestamp }, j.code.jitdumpRecord)
	case "perfmap":
		// The map as the recorder copied it, read as the daemon reads
		// one: a range the map names twice keeps the last name, as a
		// report of the recording does not (it says the range is
		// ambiguous).
		j.snap = 1
		for off := 0; off < len(data); {
			chunk := data[off:min(off+mapChunk, len(data))]
			if off+len(chunk) == len(data) && chunk[len(chunk)-1] != '\n' {
				chunk = append(slices.Clip(chunk), '\n') // the last line, unterminated
			}
			all := work{math.MaxInt64, math.MaxInt64}
			out, used, err := j.mapLines(nil, chunk, len(chunk) >= mapChunk, 0, &room, &all)
			if len(out) > 0 {
				if werr := j.appendDump(out, 0, session); werr != nil {
					return werr
				}
			}
			if err != nil {
				return err
			}
			if used == 0 {
				break
			}
			off += int(used)
		}
	case "pypy":
		// Every loop at its time (the recording's TSC calibration), in
		// log order, which is time order: the code table keeps the
		// generations a sample's time finds.
		j.pypy = pypylog.NewFollower()
		all := work{math.MaxInt64, math.MaxInt64}
		_, ferr := j.pypy.Feed(data)
		out, err := j.pypyCodes(nil, 0, &room, &all)
		j.pypy = nil // nothing more comes
		if werr := j.flushDump(out, 0, session); werr != nil {
			return werr
		}
		if err != nil {
			return err
		}
		if ferr != nil {
			return dataBound(j.path, ferr)
		}
	default:
		return fmt.Errorf("no JIT data of kind %q", j.handler)
	}
	if j.code.full {
		return boundErr("%s: more than %d pieces of JIT code (%s)", j.path, room.entries, room.entriesWhy)
	}
	return nil
}

// feed makes a jitProc.feed of a recording's JIT data: it applies, in
// file order, the records up to a time, keeping the first one past it
// for the next call, and reports whether records are left. next reads
// the next record (a jitdump's is valid until the next call); at is a
// record's time; apply applies it, false when the table is full.
func feed[R any](next func() (R, bool), at func(R) uint64, apply func(R) bool) func(uint64) bool {
	var pending R
	have := false
	return func(upTo uint64) bool {
		for {
			if !have {
				if pending, have = next(); !have {
					return false
				}
			}
			if at(pending) > upTo {
				return true
			}
			have = false
			if !apply(pending) {
				return false
			}
		}
	}
}
