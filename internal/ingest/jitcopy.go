package ingest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/anon"
	"github.com/jitprof/jitprof/internal/jitdump"
	"github.com/jitprof/jitprof/internal/sampledb"
)

// The session keeps a copy of each process's JIT data (jit/PID/), so that
// reports name JIT code after /tmp is cleaned: of a jitdump or jitlog
// database, the source up to where the daemon applied it, appended to at
// each flush; of a perf map, the numbered dump the daemon writes as it
// reads the map (the map itself has no numbers, and may be rewritten);
// of a PyPy log, the same of its loops and bridges (the log has no
// numbers either, and most of it may be other sections).
// Every file is made in the process's directory, opened relative to it,
// without following a link, and created exclusively.

// The numbered dumps' names in the process's JIT directory of the
// session: a perf map's, a PyPy log's.
const (
	perfmapSeqFile = "perfmap-seq.dump"
	pypySeqFile    = "pypy-seq.dump"
)

// seqDump is the numbered dump's kind (in the manifest) and name.
func (j *jitProc) seqDump() (kind, name string) {
	if j.handler == "pypy" {
		return anon.PyPySeq, pypySeqFile
	}
	return PerfmapSeqKind, perfmapSeqFile
}

// createIn creates name in dir for writing: exclusively, under a hidden
// name renamed into place once ready writes it, so a reader finds the
// whole beginning or nothing.
func createIn(dir *os.Root, name string, ready func(f *os.File) error) (*os.File, error) {
	tmp := "." + name + ".tmp"
	// A killed daemon's leftover: the name is taken exclusively.
	if err := dir.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := ready(f); err != nil {
		f.Close()
		dir.Remove(tmp)
		return nil, err
	}
	if err := dir.Rename(tmp, name); err != nil {
		f.Close()
		dir.Remove(tmp)
		return nil, err
	}
	return f, nil
}

// appendDump appends records to the session's numbered dump of the
// process's perf map or PyPy log, creating it with its header.
func (j *jitProc) appendDump(recs []byte, now uint64, session func() (*os.Root, error)) error {
	if j.dump == nil {
		dir, err := session()
		if err != nil {
			return err
		}
		hdr, err := jitdump.AppendHeader(nil, jitdump.Header{ByteOrder: binary.LittleEndian, Version: 1, ElfMach: 62, PID: j.pid, Timestamp: now})
		if err != nil {
			return err
		}
		_, name := j.seqDump()
		f, err := createIn(dir, name, func(f *os.File) error {
			_, err := f.Write(hdr)
			return err
		})
		if err != nil {
			return err
		}
		j.dump, j.manifest = f, false
		j.added += int64(len(hdr))
	}
	_, err := j.dump.Write(recs)
	return err
}

// source is what the session's copy is made from: the open file, or the
// bytes a recording embedded.
func (j *jitProc) source() io.ReaderAt {
	switch {
	case j.data != nil:
		return bytes.NewReader(j.data)
	case j.tail != nil:
		return j.tail.File()
	case j.f != nil:
		return j.f
	}
	return nil
}

// save copies into the session what the process's JIT data gained since
// the last save, at most *left bytes of it (which it takes), and writes
// the manifest when the files changed.
func (j *jitProc) save(session func() (*os.Root, error), left *int64) error {
	if j.handler == "" {
		return nil
	}
	// A perf map's and a PyPy log's numbered dumps are written as they
	// are read; the log itself is not copied (most of it may be the
	// sections of PyPy's garbage collector).
	copies := j.handler == "jitlog" || j.handler == "jitdump"
	if j.manifest && (!copies || j.copied == j.off) {
		return nil
	}
	dir, err := session()
	if err != nil {
		return err
	}
	if copies && j.copied < j.off {
		if err := j.copySource(dir, left); err != nil {
			return err
		}
	}
	if !j.manifest {
		return j.writeManifest(dir)
	}
	return nil
}

// copySource appends the source's bytes [copied, off) to the copy.
func (j *jitProc) copySource(dir *os.Root, left *int64) error {
	src := j.source()
	if src == nil {
		return nil
	}
	n := min(j.off-j.copied, *left)
	if n <= 0 {
		return nil
	}
	if j.copyF == nil {
		f, err := createIn(dir, "data."+j.handler, func(f *os.File) error {
			got, err := copyRange(f, src, 0, n)
			j.copied, *left, n = got, *left-got, n-got
			return err
		})
		if err != nil {
			return err
		}
		j.copyF, j.manifest = f, false
	}
	got, err := copyRange(j.copyF, src, j.copied, n)
	j.copied += got
	*left -= got
	if err == nil && got < n {
		// The source lost what was read of it: the copy, and what the
		// daemon follows, end where it does.
		j.off = j.copied
		err = boundErr("%s: shrank to %d bytes under the daemon", j.path, j.copied)
		j.bound = err
	}
	return err
}

// copyRange appends src's bytes [off, off+n) to dst; from a file, the
// kernel copies them (copy_file_range), through no buffer of the
// daemon's.
func copyRange(dst *os.File, src io.ReaderAt, off, n int64) (int64, error) {
	if f, ok := src.(*os.File); ok {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return 0, err
		}
		return io.Copy(dst, &io.LimitedReader{R: f, N: n})
	}
	return io.Copy(dst, io.NewSectionReader(src, off, n))
}

// writeManifest writes jit/PID/process.json: who the process was, which
// source numbered its code, and which file is which.
func (j *jitProc) writeManifest(dir *os.Root) error {
	m := sampledb.JITManifest{PID: j.p.PID, NSPID: j.p.NSPID, UID: j.p.UID, StartTime: j.p.StartTime, Comm: j.p.Comm, Handler: j.handler}
	if j.copyF != nil {
		m.Files = append(m.Files, sampledb.JITFile{Path: j.path, Kind: j.handler, Name: "data." + j.handler})
	}
	if j.dump != nil {
		kind, name := j.seqDump()
		m.Files = append(m.Files, sampledb.JITFile{Path: j.path + ".seq", Kind: kind, Name: name})
	}
	b, err := json.MarshalIndent(&m, "", "\t")
	if err != nil {
		return err
	}
	f, err := createIn(dir, sampledb.JITManifestName, func(f *os.File) error {
		_, err := f.Write(append(b, '\n'))
		return err
	})
	if err != nil {
		return err
	}
	j.manifest = true
	return f.Close()
}

// closeSession closes the process's files in the session: the session
// was saved or reset, and the next save makes them anew in the new one,
// or the process is let go.
func (j *jitProc) closeSession() {
	for _, f := range []*os.File{j.copyF, j.dump} {
		if f != nil {
			f.Close()
		}
	}
	if j.dir != nil {
		j.dir.Close()
	}
	j.copyF, j.dump, j.dir = nil, nil, nil
	j.copied, j.manifest = 0, false
}
