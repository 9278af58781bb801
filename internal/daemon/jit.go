package daemon

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/jitdump"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/perfmap"
	"github.com/jitprof/jitprof/internal/sampledb"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/jitlog"
)

// The JIT data sources the daemon follows, in the order it looks for
// them (the time-aware ones first, as anon.Builtins orders its
// handlers): the first a process has is its source of sequence numbers.
var jitHandlers = []string{"jitlog", "jitdump", "perfmap"}

// PerfmapSeqKind is the kind, in a session's manifest (jit/PID/process.json),
// of the jitdump the daemon writes for a process whose JIT writes only a
// perf map: every range that appears or changes in the map gets a new
// sequence number (a CODE_LOAD with that code_index), the number the
// process's sample files keep.
const PerfmapSeqKind = anon.PerfmapSeq

// lookAgain is how long the daemon waits before it looks again for the
// JIT data of a process with anonymous samples and none found: a JIT may
// create its files at its first compile.
const lookAgain = 2 * time.Second

// keepEnded is how long code that was replaced stays in a process's
// table: longer than a drain round, so that a sample drained after its
// code was re-generated still finds the generation it hit.
const keepEnded = uint64(10 * time.Second)

// jitProc is what the daemon follows of one process's JIT data.
type jitProc struct {
	pid     uint32
	p       anon.Process // who the process is, for the trust checks
	handler string       // the source found, "" while none
	path    string
	code    codeTable
	next    time.Time // when to look for data again, while none

	tail *jitlog.Tail // jitlog
	f    *os.File     // jitdump, perfmap: kept open, read again as it grows
	size int64
	mod  time.Time
	recs int // jitdump records applied

	// perfmap: the ranges of the last snapshot and their numbers, the
	// last number given, and the numbered dump in the session.
	ranges map[perfmap.Symbol]uint64
	seq    uint64
	dump   *os.File

	changed bool // data changed since it was last copied into the session
	err     error
	// data is the source's bytes when they come from a recording
	// (Import), not a file.
	data []byte
	// noFiles: the process's JIT data is only what a recording embedded.
	noFiles bool
	// pendingDump is a numbered dump not yet written to the session.
	pendingDump []byte
	checked     bool // the jitlog header was found to be the process's
	// rejected are files found to be another process's.
	rejected map[string]bool
}

// stale gives up a source that turned out to be another process's (a
// file an earlier process with the pid left): the process is taken for
// one without JIT data, looked for again later.
func (j *jitProc) stale(err error) error {
	if j.rejected == nil {
		j.rejected = map[string]bool{}
	}
	j.rejected[j.path] = true
	j.close()
	j.handler, j.path, j.changed = "", "", false
	j.code = codeTable{}
	return err
}

// find looks for the process's JIT data; found reports whether it has a
// source now.
func (j *jitProc) find(now time.Time, procs func(pid uint32) []anon.Mapping) bool {
	if j.handler != "" {
		return true
	}
	if now.Before(j.next) || j.noFiles {
		return false
	}
	j.next = now.Add(lookAgain)
	if j.p.PID == 0 {
		j.p = anon.Process{PID: int(j.pid), NSPID: int(j.pid), UID: trust.UnknownOwner}
		if id, err := linux.ReadIdentity("/proc", int(j.pid)); err == nil {
			j.p.UID, j.p.StartTime = id.UID, id.StartTime
			if id.NSPID != 0 {
				j.p.NSPID = id.NSPID
			}
		}
		j.p.Comm, _ = linux.ReadComm("/proc", int(j.pid))
	}
	j.p.Mappings = procs(j.pid)
	for _, h := range jitHandlers {
		for _, path := range anon.Paths(&j.p, h) {
			if j.rejected[path] {
				continue
			}
			err := j.open(h, path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				j.err = err
				break
			}
			j.handler, j.path, j.changed = h, path, true
			return true
		}
	}
	return false
}

func (j *jitProc) open(handler, path string) error {
	if handler == "jitlog" {
		t, err := jitlog.OpenTail(path, &jitlog.ReadOptions{Owner: j.p.UID})
		if err != nil {
			return err
		}
		j.tail = t
		return nil
	}
	f, err := anon.OpenData(&j.p, path)
	if err != nil {
		return err
	}
	j.f = f.File
	return nil
}

// poll reads what the source added since the last poll into the code
// table; now is CLOCK_MONOTONIC ns, the time of a perf map's snapshot.
func (j *jitProc) poll(now uint64, session func(pid int) (string, error)) error {
	if j.tail == nil && j.f == nil {
		// Nothing open: a table filled whole (Import, tests).
		return nil
	}
	var err error
	switch {
	case j.handler == "jitlog":
		err = j.pollJitlog()
	case j.handler == "jitdump":
		err = j.pollJitdump()
	case j.handler == "perfmap":
		err = j.pollPerfmap(now, session)
	}
	j.code.prune(now - min(now, keepEnded))
	return err
}

func (j *jitProc) pollJitlog() error {
	recs, err := j.tail.Poll()
	if h := j.tail.Header(); h != nil && !j.checked {
		// A database another process with this pid left in /tmp is
		// not this process's: its pid and start time say whose it is.
		if h.PID != uint32(j.p.NSPID) && h.PID != j.pid || j.p.StartTime != 0 && h.StartTime != j.p.StartTime {
			return j.stale(fmt.Errorf("%s: written by pid %d started at %d, not this process (started at %d)", j.path, h.PID, h.StartTime, j.p.StartTime))
		}
		j.checked = true
	}
	for _, r := range recs {
		if j.code.jitlogRecord(r) {
			j.changed = true
		}
	}
	if errors.Is(err, jitlog.ErrTorn) {
		return nil // skipped; the next poll goes on after it
	}
	return err
}

// grown reports whether the open file changed since it was last read.
func (j *jitProc) grown() (bool, error) {
	fi, err := j.f.Stat()
	if err != nil {
		return false, err
	}
	// A JIT that writes its file anew and renames it over the old one
	// (a rewritten perf map) leaves the daemon's descriptor on the old:
	// open the new one, through the same checks.
	if now, err := os.Lstat(j.path); err == nil && !os.SameFile(now, fi) {
		f, err := anon.OpenData(&j.p, j.path)
		if err != nil {
			return false, err
		}
		j.f.Close()
		j.f, j.size, j.mod, j.recs = f.File, 0, time.Time{}, 0
		if fi, err = j.f.Stat(); err != nil {
			return false, err
		}
	}
	if fi.Size() == j.size && fi.ModTime().Equal(j.mod) {
		return false, nil
	}
	if err := (trust.Rule{Owner: j.p.UID}).CheckSize(j.path, fi.Size()); err != nil {
		return false, err
	}
	j.size, j.mod = fi.Size(), fi.ModTime()
	return true, nil
}

// pollJitdump reads the records a jitdump gained. The dump is read from
// its start each time it grows (its reader stops at a torn last record,
// which a JIT still writing leaves), applying only the records not yet
// applied.
func (j *jitProc) pollJitdump() error {
	grown, err := j.grown()
	if err != nil || !grown {
		return err
	}
	r, err := jitdump.NewReader(io.NewSectionReader(j.f, 0, j.size))
	if err != nil {
		if errors.Is(err, jitdump.ErrTruncated) {
			return nil // the header is not written yet
		}
		return fmt.Errorf("%s: %w", j.path, err)
	}
	if h := r.Header(); h.PID != j.pid && h.PID != uint32(j.p.NSPID) {
		return j.stale(fmt.Errorf("%s: written by pid %d, not %d", j.path, h.PID, j.pid))
	} else if start := startMonotonic(j.p.StartTime); start != 0 && h.Flags&jitdump.FlagArchTimestamp == 0 && h.Timestamp+1e9 < start {
		// Made before the process started: an earlier process's with
		// the same pid.
		return j.stale(fmt.Errorf("%s: made before process %d started", j.path, j.pid))
	}
	n := 0
	for r.Next() {
		n++
		if n <= j.recs {
			continue
		}
		j.code.jitdumpRecord(r.Record())
		j.changed = true
	}
	j.recs = n
	if err := r.Err(); err != nil && !errors.Is(err, jitdump.ErrTruncated) {
		return fmt.Errorf("%s: %w", j.path, err)
	}
	return nil
}

// pollPerfmap takes a snapshot of a perf map that changed: a range (start,
// size, name) not in the last snapshot gets a new sequence number, and a
// CODE_LOAD with it in the session's numbered dump; code it overlaps
// ends.
func (j *jitProc) pollPerfmap(now uint64, session func(pid int) (string, error)) error {
	grown, err := j.grown()
	if err != nil || !grown {
		return err
	}
	m, err := perfmap.Options{Lenient: true}.Parse(io.NewSectionReader(j.f, 0, j.size))
	if err != nil {
		return fmt.Errorf("%s: %w", j.path, err)
	}
	if j.ranges == nil {
		j.ranges = map[perfmap.Symbol]uint64{}
	}
	seen := make(map[perfmap.Symbol]bool, len(m.Symbols))
	var out []byte
	for _, s := range m.Symbols {
		if s.Size == 0 {
			continue
		}
		s.Line = 0
		seen[s] = true
		if _, ok := j.ranges[s]; ok {
			continue
		}
		j.seq++
		j.ranges[s] = j.seq
		j.code.load(s.Start, s.Size, j.seq, now)
		if out, err = j.appendRange(out, s, j.seq, now); err != nil {
			return err
		}
	}
	for s, seq := range j.ranges {
		if !seen[s] {
			j.code.unload(seq, now)
			delete(j.ranges, s)
		}
	}
	if len(out) > 0 {
		j.changed = true
		return j.appendDump(out, now, session)
	}
	return nil
}

// appendDump appends records to the session's numbered dump of the
// process's perf map, creating it with its header.
func (j *jitProc) appendDump(recs []byte, now uint64, session func(pid int) (string, error)) error {
	if j.dump == nil {
		dir, err := session(int(j.pid))
		if err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(dir, perfmapSeqFile), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		hdr, err := jitdump.AppendHeader(nil, jitdump.Header{ByteOrder: binary.LittleEndian, Version: 1, ElfMach: 62, PID: j.pid, Timestamp: now})
		if err == nil {
			_, err = f.Write(hdr)
		}
		if err != nil {
			f.Close()
			return err
		}
		j.dump = f
	}
	_, err := j.dump.Write(recs)
	return err
}

// userHZ is the unit of /proc/PID/stat's start time (USER_HZ, 100 on
// every Linux ABI).
const userHZ = 100

// startMonotonic is a process's start time (/proc/PID/stat's, ticks of
// CLOCK_BOOTTIME) on CLOCK_MONOTONIC, which JITs stamp their data with
// and which stops while the machine sleeps; 0 when unknown.
func startMonotonic(ticks uint64) uint64 {
	var boot, mono unix.Timespec
	if ticks == 0 || unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot) != nil || unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono) != nil {
		return 0
	}
	start := ticks * (1e9 / userHZ)
	if slept := uint64(boot.Nano() - mono.Nano()); start > slept {
		return start - slept
	}
	return 0
}

// perfmapSeqFile is the numbered dump's name in the process's JIT
// directory of the session.
const perfmapSeqFile = "perfmap-seq.dump"

func (j *jitProc) close() {
	if j.tail != nil {
		j.tail.Close()
	}
	if j.f != nil {
		j.f.Close()
	}
	if j.dump != nil {
		j.dump.Close()
	}
	j.tail, j.f, j.dump = nil, nil, nil
}

// maxJITCopy bounds the JIT data copied for one process.
const maxJITCopy = trust.MaxSize

// copyInto copies the process's JIT data into its session directory dir
// (whole files, written aside and renamed over: a reader sees an old or
// a new copy), with the manifest.
func (j *jitProc) copyInto(dir string) error {
	if j.handler == "" {
		return nil
	}
	m := sampledb.JITManifest{PID: j.p.PID, NSPID: j.p.NSPID, UID: j.p.UID, StartTime: j.p.StartTime, Comm: j.p.Comm, Handler: j.handler}
	data, err := j.readData()
	if err != nil {
		return err
	}
	name := "data." + j.handler
	if err := writeAside(dir, name, data); err != nil {
		return err
	}
	m.Files = append(m.Files, sampledb.JITFile{Path: j.path, Kind: j.handler, Name: name})
	if j.dump != nil {
		m.Files = append(m.Files, sampledb.JITFile{Path: j.path + ".seq", Kind: PerfmapSeqKind, Name: perfmapSeqFile})
	}
	b, err := json.MarshalIndent(&m, "", "\t")
	if err != nil {
		return err
	}
	if err := writeAside(dir, sampledb.JITManifestName, append(b, '\n')); err != nil {
		return err
	}
	j.changed = false
	return nil
}

// readData reads the source's file whole, through the trust checks.
func (j *jitProc) readData() ([]byte, error) {
	if j.data != nil {
		return j.data, nil
	}
	f, err := anon.OpenData(&j.p, j.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Size > maxJITCopy {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d copied", j.path, f.Size, maxJITCopy)
	}
	return io.ReadAll(io.LimitReader(f, f.Size))
}

func writeAside(dir, name string, b []byte) error {
	tmp := filepath.Join(dir, "."+name+"."+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// appendRange appends the numbered dump's record of a perf map's range:
// a CODE_LOAD whose code_index is the range's sequence number.
func (j *jitProc) appendRange(out []byte, s perfmap.Symbol, seq, t uint64) ([]byte, error) {
	return jitdump.AppendRecord(out, binary.LittleEndian, &jitdump.CodeLoad{
		PID: j.pid, TID: j.pid, VMA: s.Start, CodeAddr: s.Start, CodeSize: s.Size, CodeIndex: seq, Name: s.Name,
		RecordHeader: jitdump.RecordHeader{Timestamp: t},
	})
}
