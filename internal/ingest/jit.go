package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/jitdump"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/perfmap"
	"github.com/jitprof/jitprof/internal/pypylog"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/jitlog"
)

// The JIT data sources the daemon follows, in the order it looks for
// them (the time-aware ones first, as anon.Builtins orders its
// handlers): the first a process has is its source of sequence numbers.
var jitHandlers = []string{"jitlog", "jitdump", "pypy", "perfmap"}

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

// maxRecord bounds one jitdump record the daemon reads: V8's largest
// (the code of big builtins) are tens of KB.
const maxRecord = 4 << 20

// mapChunk is the most of a perf map read at once: lines are at most
// perfmap.DefaultMaxLineLen, so a chunk without a newline is a line too
// long, skipped.
const mapChunk = 256 << 10

// jitProc is what the daemon follows of one process's JIT data.
type jitProc struct {
	pid     uint32
	proc    linux.Proc   // where /proc is: the host's, or a test's copy
	p       anon.Process // who the process is, for the trust checks
	handler string       // the source found, "" while none
	path    string
	code    codeTable
	next    time.Time // when to look for data again, while none

	tail *jitlog.Tail // jitlog
	f    *os.File     // jitdump, perfmap, pypy: kept open, read as it grows
	size int64        // the source's size at the last poll
	mod  time.Time
	// off is how far the source is applied: the jitdump record after
	// the last applied, the end of the perf map's last whole line read.
	// The session's copy of a jitdump or jitlog holds the source up to
	// it.
	off int64
	hdr *jitdump.Header // the jitdump's, once read

	// perfmap: the ranges of the map and their numbers, the last number
	// given, the snapshot being read and, after the map was rewritten,
	// that ranges not in the new one end when it is read to its end.
	ranges map[rangeKey]mapRange
	seq    uint64
	snap   uint64
	sweep  bool
	skip   bool // in a line too long to be one, skipped to its newline
	// partial: the last poll read to the end of the file and stopped
	// at a line without its newline, not read again until the file
	// grows.
	partial bool

	// pypy: the log read so far (its loops and bridges are numbered
	// with seq, as a perf map's ranges), whether the process's
	// environment was asked for PYPYLOG, and the clock of the log's TSC
	// stamps for this poll (nil without a TSC: code is then stamped with
	// the poll's time).
	pypy    *pypylog.Follower
	envRead bool
	// pypyRoot is where the PyPy log's path is resolved, for a process
	// that does not see the host's files at their paths: its root
	// (/proc/PID/root) or, for a relative path, its working directory
	// (/proc/PID/cwd); "" for the host's paths.
	pypyRoot string
	clock    *pypylog.Clock

	// In the session: the process's directory there, the copy of the
	// source, the numbered dump of a perf map, whether the manifest is
	// written, and the bytes of JIT data the process added (applied, so
	// copied by the next flush if not yet).
	dir      *os.Root
	copyF    *os.File
	copied   int64
	dump     *os.File
	manifest bool
	added    int64

	behind bool // its last poll used all its share of the work
	// bound is the bound its data met, or the refusal of its file (a
	// sparse one): no more of it is followed.
	bound error
	// data is the source's bytes when they come from a recording
	// (Import), not a file.
	data []byte
	// noFiles: the process's JIT data is only what a recording embedded.
	noFiles bool
	// feed applies a recording's JIT data up to a time, as the daemon
	// would have read it by then (Import); false when all is applied or
	// the table is full.
	feed    func(upTo uint64) bool
	checked bool // the jitlog header was found to be the process's
	// rejected are files found to be another process's.
	rejected map[string]bool
}

// mapRange is a perf map range's number and the snapshot it was last
// seen in.
type mapRange struct{ seq, snap uint64 }

// rangeKey is a perf map range as the daemon keeps it: its name is
// hashed (with a seed of this process's, which no map's writer knows),
// for the ranges of a large map take a tenth of the memory they would
// with their names. The name is written once, in the numbered dump.
type rangeKey struct{ start, size, name uint64 }

var nameSeed = maphash.MakeSeed()

func keyOf(s perfmap.Symbol) rangeKey {
	return rangeKey{s.Start, s.Size, maphash.String(nameSeed, s.Name)}
}

// entries is what the process's JIT data holds in memory.
func (j *jitProc) entries() int { return j.code.len() + j.held() }

// held is what the process's JIT data holds in memory besides its code
// table, in pieces: a perf map's ranges, what a PyPy log's names need
// (pypylog.Follower.Held: a piece per pypylog.HeldUnit bytes).
func (j *jitProc) held() int {
	n := len(j.ranges)
	if j.pypy != nil {
		n += j.pypy.Held()
	}
	return n
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
	j.handler, j.path = "", ""
	j.code, j.off, j.hdr, j.ranges, j.pypy = codeTable{}, 0, nil, nil, nil
	return err
}

// find looks for the process's JIT data; found reports whether it has a
// source now, err why a file was refused.
func (j *jitProc) find(now time.Time, procs func(pid uint32) []anon.Mapping) (found bool, err error) {
	if j.handler != "" {
		return true, nil
	}
	if now.Before(j.next) || j.noFiles {
		return false, nil
	}
	j.next = now.Add(lookAgain)
	if j.p.PID == 0 {
		var known *linux.Identity
		if id, err := j.proc.Identity(int(j.pid)); err == nil {
			known = &id
		}
		comm, _ := j.proc.Comm(int(j.pid))
		j.p = anon.NewProcess(j.pid, comm, nil, known)
	}
	j.p.Mappings = procs(j.pid)
	j.pypyLog()
	for _, h := range jitHandlers {
		for _, path := range anon.Paths(&j.p, h) {
			if j.rejected[path] {
				continue
			}
			err := j.open(h, path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if errors.Is(err, errNotHeld) {
				// Another process's log (the parent's of a forked
				// child): not looked at again, and said once. The log is
				// open before PyPy has code to sample.
				if j.rejected == nil {
					j.rejected = map[string]bool{}
				}
				j.rejected[path] = true
				return false, err
			}
			if err != nil {
				return false, err
			}
			j.handler, j.path = h, path
			j.snap = 1
			return true, nil
		}
	}
	return false, nil
}

// pypyLog sets, once, the log a PyPy process writes: the file its
// PYPYLOG names (/proc/PID/environ; only that variable is read of it),
// relative to its working directory now (PyPy opens its log as it
// starts, and a program seldom changes directory before). The file is
// then opened as every JIT data file is, and followed only if the
// process holds it open (open).
//
// The variable's path is the process's: it is taken for the host's
// when the process sees the host's files at their paths (its mount
// namespace, not chrooted). For a process in a container (another mount
// namespace) or chrooted, it names a file in the process's view: it is
// resolved inside the process's root (/proc/PID/root) or, relative,
// inside its working directory (/proc/PID/cwd), as the process sees
// them, without following a symlink or going above that directory
// (internal/trust's OpenIn, rule 2 of docs/security.md). A process
// running set-id is not followed: its environment is the word of the
// user who ran it, not of the user its files are judged by.
func (j *jitProc) pypyLog() {
	if j.envRead || !j.p.IsPyPy() {
		return
	}
	j.envRead = true
	pid := int(j.pid)
	host, err := j.proc.SeesHostFiles(pid)
	if err != nil {
		return
	}
	if setid, err := j.proc.SetID(pid); err != nil || setid {
		return
	}
	v, ok, err := j.proc.Getenv(pid, "PYPYLOG")
	file := pypylog.LogFile(v)
	if err != nil || !ok || file == "" {
		return
	}
	if !host {
		base := j.proc.RootDir(pid)
		if !filepath.IsAbs(file) {
			base = j.proc.Dir(pid) + "/cwd"
		}
		// A path that climbs above its base ("/../x") is not the
		// process's file as the base resolves it: not followed.
		if path := filepath.Join(base, file); strings.HasPrefix(path, base+"/") {
			j.pypyRoot, j.p.PyPyLog = base, path
		}
		return
	}
	if !filepath.IsAbs(file) {
		cwd, err := j.proc.Cwd(pid)
		if err != nil || !filepath.IsAbs(cwd) {
			return
		}
		file = filepath.Join(cwd, file)
	}
	j.p.PyPyLog = file
}

// errNotHeld refuses a PyPy log the process does not hold open.
var errNotHeld = errors.New("not open in the process")

func (j *jitProc) open(handler, path string) error {
	if handler == "jitlog" {
		t, err := jitlog.OpenTail(path, &jitlog.ReadOptions{Owner: j.p.UID})
		if err != nil {
			return err
		}
		// The code's records (codeTable.jitlogRecord), not the regions
		// a JIT enters and leaves.
		t.Want(jitlog.CodeKinds...)
		j.tail = t
		return nil
	}
	p := &j.p
	if handler == "pypy" && j.pypyRoot != "" {
		// The log of a process in a container, resolved in its root
		// or working directory (pypyLog).
		in := j.p
		in.Root = j.pypyRoot
		p = &in
	}
	f, err := anon.OpenData(p, path)
	if err != nil {
		return err
	}
	if handler == "pypy" {
		// PYPYLOG names the file PyPy opened as it started, not the
		// one it writes: a child forked from a PyPy keeps its parent's
		// environment but writes no log, or another (%d in the name), and
		// a PyPy that could not open the file writes to standard error.
		// The file the process holds open is the one it writes.
		if err := j.heldOpen(f.File); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", path, err)
		}
		j.pypy = pypylog.NewFollower()
	}
	j.f = f.File
	return nil
}

// heldOpen checks that the process has f, the file the daemon opened,
// open (one of its descriptors is f's inode): errNotHeld if not.
func (j *jitProc) heldOpen(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	held, err := j.proc.HoldsOpen(int(j.pid), uint64(st.Dev), st.Ino)
	if err != nil {
		return err
	}
	if !held {
		return errNotHeld
	}
	return nil
}

// poll applies what the source added since the last poll to the code
// table, doing at most the work w leaves (which it takes) and adding at
// most room's bytes and entries; now is CLOCK_MONOTONIC ns, the time of
// a perf map's snapshot. session is the process's directory in the
// session, where a perf map's numbered dump goes.
func (j *jitProc) poll(now uint64, w *work, room jitRoom, session func() (*os.Root, error)) error {
	if j.tail == nil && j.f == nil || j.bound != nil {
		// Nothing open (a table filled whole: Import, tests), or no
		// more followed.
		return nil
	}
	j.code.limit = room.entries - j.held()
	j.code.tableLimit = room.tables
	var err error
	switch j.handler {
	case "jitlog":
		err = j.pollJitlog(w, room)
	case "jitdump":
		err = j.pollJitdump(w, room)
	case "perfmap":
		err = j.pollPerfmap(now, w, room, session)
	case "pypy":
		err = j.pollPyPy(now, w, room, session)
	}
	j.code.prune(now - min(now, keepEnded))
	if err == nil && j.code.full {
		err = boundErr("more than %d pieces of JIT code (%s)", room.entries, room.entriesWhy)
	}
	var b *errBound
	if errors.As(err, &b) || errors.Is(err, trust.ErrUntrusted) {
		j.bound = err
	}
	return err
}

func (j *jitProc) pollJitlog(w *work, room jitRoom) error {
	before := j.tail.Offset()
	limit := min(w.bytes, room.bytes)
	if limit <= 0 {
		limit = -1 // none, only whether one waits
	}
	recs, more, err := j.tail.PollLimit(limit, int(w.records))
	if h := j.tail.Header(); h != nil && !j.checked {
		// A database another process with this pid left in /tmp is
		// not this process's: its pid and start time say whose it is.
		if h.PID != uint32(j.p.NSPID) && h.PID != j.pid || j.p.StartTime != 0 && h.StartTime != j.p.StartTime {
			return j.stale(fmt.Errorf("%s: written by pid %d started at %d, not this process (started at %d)", j.path, h.PID, h.StartTime, j.p.StartTime))
		}
		j.checked = true
	}
	for _, r := range recs {
		if !j.code.jitlogRecord(r) {
			break
		}
	}
	read := j.tail.Offset() - before
	j.off = j.tail.Offset()
	j.added += read
	w.bytes -= read
	w.records -= int64(j.tail.Frames()) // the region records stepped over too
	if more && room.bytes-read <= 0 {
		return boundErr("%s: past %s of JIT data (%s)", j.path, mib(j.added), room.bytesWhy)
	}
	if errors.Is(err, jitlog.ErrTorn) {
		return nil // skipped; the next poll goes on after it
	}
	if err == nil {
		// The records read are whole and had better be there.
		err = trust.CheckDense(j.tail.File(), j.path, before, j.off)
	}
	return err
}

// grown stats the open file: whether it changed since the last poll,
// and whether it was written anew: shrunk, or, for a perf map, of the
// same size but modified, or the path names another file (a perf map
// written anew and renamed over the old, which it then opens through
// the same checks).
func (j *jitProc) grown() (grown, replaced bool, err error) {
	fi, err := j.f.Stat()
	if err != nil {
		return false, false, err
	}
	// A PyPy log is the file the process holds open (open): what is at
	// its path since does not matter, PyPy writes the descriptor's.
	if now, err := os.Lstat(j.path); err == nil && !os.SameFile(now, fi) && j.handler != "pypy" {
		if j.handler != "perfmap" {
			// The descriptor keeps the file the daemon read, which the
			// session's copy (or numbered dump) is made of.
			return true, true, nil
		}
		if j.sweep && j.off < fi.Size() {
			// A new map read to its end before the next: each
			// snapshot is one map, whole, however often it is
			// replaced.
			return true, false, nil
		}
		f, err := anon.OpenData(&j.p, j.path)
		if err != nil {
			// Replaced again while it was opened (it has no link left),
			// or by a file that fails the checks: the map as last read
			// stays, and the next poll looks again.
			return false, false, fmt.Errorf("%s written anew, not read: %v", j.path, err)
		}
		j.f.Close()
		j.f, replaced = f.File, true
		if fi, err = j.f.Stat(); err != nil {
			return false, true, err
		}
	}
	if !replaced && fi.Size() == j.size && fi.ModTime().Equal(j.mod) {
		return false, false, nil
	}
	if err := (trust.Rule{Owner: j.p.UID}).CheckSize(j.path, fi.Size()); err != nil {
		return false, replaced, err
	}
	// A perf map written anew in place may keep its size; a jitdump is
	// only appended to. (A stat during a write can see its new mtime
	// before its new size: for a jitdump that is no rewrite.)
	rewritten := replaced || fi.Size() < j.off ||
		j.handler == "perfmap" && fi.Size() == j.size && !fi.ModTime().Equal(j.mod)
	j.size, j.mod = fi.Size(), fi.ModTime()
	return true, rewritten, nil
}

// pollJitdump applies the records a jitdump gained: from the offset of
// the first not yet applied, within w and room, so a dump is read once
// however it grows.
func (j *jitProc) pollJitdump(w *work, room jitRoom) error {
	grown, rewritten, err := j.grown()
	if err != nil || !grown && j.off == j.size {
		return err
	}
	if rewritten && j.hdr != nil {
		// A JIT appends to its dump; one written anew is not the data
		// the sample files' numbers came from.
		return boundErr("%s: rewritten after %d bytes were read", j.path, j.off)
	}
	if err := trust.CheckDense(j.f, j.path, j.off, j.size); err != nil {
		return err
	}
	if j.hdr == nil {
		r, err := jitdump.NewReader(io.NewSectionReader(j.f, 0, j.size))
		if err != nil {
			if errors.Is(err, jitdump.ErrTruncated) {
				return nil // the header is not written yet
			}
			return fmt.Errorf("%s: %w", j.path, err)
		}
		h := r.Header()
		if h.PID != j.pid && h.PID != uint32(j.p.NSPID) {
			return j.stale(fmt.Errorf("%s: written by pid %d, not %d", j.path, h.PID, j.pid))
		} else if start := startMonotonic(j.p.StartTime); start != 0 && h.Flags&jitdump.FlagArchTimestamp == 0 && h.Timestamp+1e9 < start {
			// Made before the process started: an earlier process's
			// with the same pid.
			return j.stale(fmt.Errorf("%s: made before process %d started", j.path, j.pid))
		}
		j.hdr = &h
		j.off = int64(h.Size)
		j.added += j.off
		w.bytes -= j.off
	}
	// What may be read: the rest of the file, within the round's work
	// and the room left, but always the next record whole if it fits
	// the room.
	end := min(j.size, j.off+min(w.bytes, room.bytes))
	if n := j.nextRecord(); n > 0 && end < j.off+n && j.off+n <= min(j.size, j.off+room.bytes) {
		end = j.off + n
	}
	r := jitdump.ResumeReader(io.NewSectionReader(j.f, j.off, end-j.off), *j.hdr, j.off)
	r.MaxRecordSize = maxRecord
	n := int64(0)
	for n < w.records && r.Next() {
		n++
		if !j.code.jitdumpRecord(r.Record()) {
			break
		}
	}
	read := r.Offset() - j.off
	j.off = r.Offset()
	j.added += read
	w.bytes -= read
	w.records -= n
	if err := r.Err(); err != nil && !errors.Is(err, jitdump.ErrTruncated) {
		return fmt.Errorf("%s: %w", j.path, err)
	}
	if next := j.nextRecord(); next > 0 && j.off+next <= j.size && next > room.bytes-read {
		return boundErr("%s: past %s of JIT data (%s)", j.path, mib(j.added), room.bytesWhy)
	}
	return nil
}

// nextRecord is the size of the jitdump record at j.off, as its header
// says, 0 if the header is not there yet or is past reading.
func (j *jitProc) nextRecord() int64 {
	var rh [jitdump.RecordHeaderSize]byte
	if _, err := j.f.ReadAt(rh[:], j.off); err != nil {
		return 0
	}
	if n := int64(j.hdr.ByteOrder.Uint32(rh[4:])); n >= jitdump.RecordHeaderSize && n <= maxRecord {
		return n
	}
	return 0
}

// pollPerfmap reads what a perf map gained: the lines appended since the
// last poll or, once the map was written anew, the whole new map, a
// chunk at a time within w and room. A range (start, size, name) not in
// the map before gets a new sequence number, and a CODE_LOAD with it in
// the session's numbered dump; code it overlaps ends. When a new map is
// read to its end, the ranges it no longer has end.
func (j *jitProc) pollPerfmap(now uint64, w *work, room jitRoom, session func() (*os.Root, error)) error {
	grown, rewritten, err := j.grown()
	if err != nil {
		return err
	}
	var out []byte
	if rewritten {
		if j.sweep {
			// Written anew again before the last new map was read
			// to its end: only what that one had so far stays.
			j.sweepBefore(j.snap, now)
		}
		j.off, j.skip, j.sweep = 0, false, true
		j.snap++
	}
	if !grown && j.off == j.size && !j.sweep {
		return nil
	}
	dumpBuf := dumps.Get().(*[]byte)
	defer func() {
		if cap(out) <= maxPooledDump {
			*dumpBuf = out[:0]
			dumps.Put(dumpBuf)
		}
	}()
	out = (*dumpBuf)[:0]
	var werr error
	if rerr := j.readChunks(w, func(buf []byte, full bool) int64 {
		var used int64
		out, used, err = j.mapLines(out, buf, full, now, &room, w)
		if err == nil && len(out) >= mapChunk {
			// Written a chunk at a time: the dump of a map of
			// hundreds of thousands of lines, read at once, is tens
			// of megabytes, and growing it so allocated ten times that.
			if werr = j.appendDump(out, now, session); werr != nil {
				return -used - 1
			}
			out = out[:0]
		}
		if err != nil {
			return -used - 1
		}
		return used // none: a torn last line, the rest is not written yet
	}); rerr != nil {
		return rerr
	}
	if werr != nil {
		return werr
	}
	if err == nil && j.off == j.size && j.sweep {
		// The new map is read: what it no longer has is gone.
		j.sweepBefore(j.snap, now)
		j.sweep = false
	}
	if len(out) > 0 {
		if werr := j.appendDump(out, now, session); werr != nil {
			return werr
		}
	}
	return err
}

// readChunks reads j's file from j.off, once the range to read is
// checked dense, a chunk of at most mapChunk bytes at a time while w has
// bytes and records left, giving each chunk to use (full: as long as a
// chunk can be). use returns how many of the chunk's bytes it used, by
// which j.off moves on, or -used-1 to stop after them; using none stops
// too (a last line not yet whole). An error is a read's.
func (j *jitProc) readChunks(w *work, use func(buf []byte, full bool) int64) error {
	if err := trust.CheckDense(j.f, j.path, j.off, j.size); err != nil {
		return err
	}
	chunk := chunks.Get().(*[]byte)
	defer chunks.Put(chunk)
	for j.off < j.size && w.bytes > 0 && w.records > 0 {
		n := min(j.size-j.off, mapChunk, w.bytes)
		buf := (*chunk)[:n]
		if _, err := j.f.ReadAt(buf, j.off); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: %w", j.path, err)
		}
		w.bytes -= n
		used := use(buf, n == mapChunk)
		if used < 0 {
			j.off += -used - 1
			break
		}
		j.off += used
		if used == 0 {
			break
		}
	}
	return nil
}

// sweepBefore ends the ranges last seen before snapshot snap.
func (j *jitProc) sweepBefore(snap, now uint64) {
	for k, r := range j.ranges {
		if r.snap < snap {
			j.code.unload(r.seq, now)
			delete(j.ranges, k)
		}
	}
}

// chunks are the buffers perf maps are read into, a chunk at a time.
var chunks = sync.Pool{New: func() any { b := make([]byte, mapChunk); return &b }}

// dumps are the buffers a perf map's numbered dump is written from
// (pollPerfmap): each round reads a chunk or more of a large map, and a
// buffer grown anew for each allocated ten times the dump.
var dumps = sync.Pool{New: func() any { b := make([]byte, 0, 2*mapChunk); return &b }}

// maxPooledDump bounds the buffers dumps keeps: a chunk's records, with
// the chunk before that did not yet fill mapChunk.
const maxPooledDump = 8 * mapChunk

// mapLines applies the whole lines of b, read at j.off, a new range
// costing a record of w, and returns the dump's records grown and how
// many bytes of b it used; full says b is a whole chunk, so a chunk
// without a newline is a line too long.
func (j *jitProc) mapLines(out, b []byte, full bool, now uint64, room *jitRoom, w *work) ([]byte, int64, error) {
	used := int64(0)
	if j.skip {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return out, int64(len(b)), nil
		}
		j.skip = false
		used, b = int64(i+1), b[i+1:]
	}
	if full && bytes.IndexByte(b, '\n') < 0 {
		j.skip = true
		return out, used + int64(len(b)), nil
	}
	if j.ranges == nil {
		j.ranges = map[rangeKey]mapRange{}
	}
	for w.records > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break // a torn last line: the rest is not written yet
		}
		s, ok, err := perfmap.ParseLine(b[:i+1])
		used, b = used+int64(i+1), b[i+1:]
		if err != nil || !ok || s.Size == 0 {
			continue // a bad line, or one naming no address (V8 writes some)
		}
		k := keyOf(s)
		if r, ok := j.ranges[k]; ok {
			r.snap = j.snap
			j.ranges[k] = r
			continue
		}
		n := len(out)
		if out, err = j.appendRange(out, s, j.seq+1, now); err != nil {
			return out[:n], used, err
		}
		if size := int64(len(out) - n); size > room.bytes {
			return out[:n], used, boundErr("%s: past %s of numbered perf map (%s)", j.path, mib(j.added), room.bytesWhy)
		} else if j.entries() >= room.entries {
			return out[:n], used, boundErr("%s: more than %d pieces of JIT code (%s)", j.path, room.entries, room.entriesWhy)
		} else {
			room.bytes -= size
			room.entries--
			j.added += size
		}
		w.records--
		j.seq++
		j.ranges[k] = mapRange{seq: j.seq, snap: j.snap}
		j.code.load(s.Start, s.Size, j.seq, now)
	}
	return out, used, nil
}

// pollPyPy reads what a PyPy log gained: from the end of the last whole
// line read, a chunk at a time within w and room, through the process's
// pypylog.Follower. Each loop or bridge the log gains gets a new
// sequence number, from its section's time on (the log's TSC stamp on
// CLOCK_MONOTONIC by j.clock), and a CODE_LOAD with it and its name in
// the session's numbered dump, as a perf map's ranges do; code it
// overlaps (PyPy frees loops and reuses their memory) ends then. A log
// is only appended to: one written anew (shrunk) is not followed
// further.
func (j *jitProc) pollPyPy(now uint64, w *work, room jitRoom, session func() (*os.Root, error)) error {
	grown, rewritten, err := j.grown()
	if err != nil || !grown && (j.off == j.size || j.partial) {
		return err
	}
	j.partial = false
	if rewritten && j.off > 0 {
		return boundErr("%s: written anew after %d bytes were read", j.path, j.off)
	}
	var out []byte
	if rerr := j.readChunks(w, func(buf []byte, full bool) int64 {
		var used int
		var ferr error
		if j.skip {
			// A line longer than a chunk, which PyPy never writes
			// (only text can be long): skipped to its newline.
			if i := bytes.IndexByte(buf, '\n'); i >= 0 {
				used, j.skip = i+1, false
				j.pypy.SkipLine()
			} else {
				used = len(buf)
			}
		} else {
			used, ferr = j.pypy.Feed(buf)
			if used == 0 && full {
				used, j.skip = len(buf), true
			}
		}
		out, err = j.pypyCodes(out, now, &room, w)
		if ferr != nil {
			err = dataBound(j.path, ferr)
		}
		if err != nil {
			return -int64(used) - 1
		}
		if used == 0 {
			// A last line not yet whole: PyPy writes whole sections, so
			// it is read when the file grows.
			j.partial = j.off+int64(len(buf)) == j.size
		}
		return int64(used)
	}); rerr != nil {
		return rerr
	}
	if err != nil {
		return errors.Join(err, j.flushDump(out, now, session))
	}
	if err := j.flushDump(out, now, session); err != nil {
		return err
	}
	if j.entries() > room.entries {
		return boundErr("%s: more than %d pieces of JIT code and of what names PyPy's (%s)", j.path, room.entries, room.entriesWhy)
	}
	return nil
}

// flushDump appends the numbered dump's new records, if any.
func (j *jitProc) flushDump(out []byte, now uint64, session func() (*os.Root, error)) error {
	if len(out) == 0 {
		return nil
	}
	return j.appendDump(out, now, session)
}

// pypyCodes numbers the loops and bridges the Follower read, loads them
// into the code table and appends their records to out, each costing a
// record of w and its bytes of room.
func (j *jitProc) pypyCodes(out []byte, now uint64, room *jitRoom, w *work) ([]byte, error) {
	codes, names := j.pypy.Codes()
	for i := range codes {
		c := &codes[i]
		t := now
		if j.clock != nil {
			t = j.clock.Nanos(c.Time)
		}
		n := len(out)
		var err error
		if out, err = j.appendRange(out, perfmap.Symbol{Start: c.Start, Size: c.End - c.Start, Name: names[i]}, j.seq+1, t); err != nil {
			return out[:n], err
		}
		size := int64(len(out) - n)
		if size > room.bytes {
			return out[:n], boundErr("%s: past %s of numbered PyPy code (%s)", j.path, mib(j.added), room.bytesWhy)
		}
		room.bytes -= size
		j.added += size
		w.records--
		j.seq++
		if !j.code.load(c.Start, c.End-c.Start, j.seq, t) {
			return out, boundErr("%s: more than %d pieces of JIT code (%s)", j.path, room.entries, room.entriesWhy)
		}
	}
	return out, nil
}

// appendRange appends the numbered dump's record of a perf map's range
// (or a PyPy loop's): a CODE_LOAD whose code_index is the range's
// sequence number.
func (j *jitProc) appendRange(out []byte, s perfmap.Symbol, seq, t uint64) ([]byte, error) {
	return jitdump.AppendRecord(out, binary.LittleEndian, &jitdump.CodeLoad{
		PID: j.pid, TID: j.pid, VMA: s.Start, CodeAddr: s.Start, CodeSize: s.Size, CodeIndex: seq, Name: s.Name,
		RecordHeader: jitdump.RecordHeader{Timestamp: t},
	})
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
	// The two clocks are read one after the other, and where the
	// machine never slept CLOCK_BOOTTIME can read a few µs behind.
	if slept := uint64(max(boot.Nano()-mono.Nano(), 0)); start > slept {
		return start - slept
	}
	return 0
}

// close closes the source and the session's files.
func (j *jitProc) close() {
	if j.tail != nil {
		j.tail.Close()
	}
	if j.f != nil {
		j.f.Close()
	}
	j.tail, j.f = nil, nil
	j.closeSession()
}
