package anon

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/pypylog"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/jitlog"
)

// collector is implemented by built-in handlers whose data are files that
// jitprof record can copy into the recording.
type collector interface {
	// paths are where p's data may be, in the order the handler tries.
	paths(p *Process) []string
	// used returns the part of a file's bytes worth keeping.
	used(b []byte) []byte
}

func (perfmapHandler) paths(p *Process) []string {
	return filePaths(p, func(pid int) string { return "/tmp/perf-" + itoa(pid) + ".map" })
}
func (perfmapHandler) used(b []byte) []byte { return b }

func (jitdumpHandler) paths(p *Process) []string { return jitdumpPaths(p) }
func (jitdumpHandler) used(b []byte) []byte      { return b }

func (jitlogHandler) paths(p *Process) []string { return jitlogPaths(p) }

// used keeps a jitlog database up to its last record: writers grow the
// file ahead of need, and the zeros past the records are not data.
func (jitlogHandler) used(b []byte) []byte {
	r, err := jitlog.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return b
	}
	for r.Next() {
	}
	if end := r.Offset(); end > 0 && end <= int64(len(b)) {
		return b[:end]
	}
	return b
}

// paths is where the log of PYPYLOG is, when the recorder knows the
// variable: PyPy writes one per process, "%d" standing for its pid.
func (*pypyHandler) paths(p *Process) []string {
	if p.PyPyLog == "" || !looksLikePyPy(p) {
		return nil
	}
	var paths []string
	for _, pid := range pids(p) {
		paths = append(paths, strings.ReplaceAll(p.PyPyLog, "%d", itoa(int(pid))))
	}
	return uniq(paths)
}

// used keeps the sections the pypy handler reads: the rest of a log (the
// GC's, the backend's dumps) can be most of it.
func (*pypyHandler) used(b []byte) []byte { return pypylog.Keep(b) }

// Collect copies p's JIT data, the first existing file of each built-in
// handler that reads files, for jitprof record to embed in the recording
// (jitprof's perf.data section, see internal/jitbundle), so that reports
// name JIT code after /tmp is cleaned or on another machine. Files go
// through the same trust checks as when a report reads them; a file that
// fails them, or would take the total past limit bytes, is left out with
// an error saying so.
func Collect(p *Process, limit int64) ([]jitbundle.Entry, []error) {
	var entries []jitbundle.Entry
	var errs []error
	var total int64
	for _, d := range dataFiles(p) {
		if d.err != nil {
			errs = append(errs, fmt.Errorf("pid %d: %s data not embedded: %w", p.PID, d.kind, d.err))
			continue
		}
		e, err := collectFile(p, d.path, d.f, limit-total)
		d.f.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("pid %d: %s data not embedded: %w", p.PID, d.kind, err))
			continue
		}
		e.Kind = d.kind
		e.Data = d.c.used(e.Data)
		total += int64(len(e.Data))
		entries = append(entries, e)
	}
	return entries, errs
}

// dataFile is the JIT data of one built-in handler for one process: the
// first of its paths that exists, opened after the trust checks, or why
// that file was refused.
type dataFile struct {
	kind, path string
	c          collector
	f          *trust.File // nil with err
	err        error
}

// dataFiles opens p's JIT data on disk: for each built-in handler that
// reads files, in the order they are tried, the first of its paths that
// exists. The caller closes the files.
func dataFiles(p *Process) []dataFile {
	var out []dataFile
	builtins, _ := Select(nil)
	for _, h := range builtins {
		name := h.Name()
		c, ok := h.(collector)
		if !ok {
			continue
		}
		for _, path := range c.paths(p) {
			f, err := openTrusted(p, path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			out = append(out, dataFile{kind: name, path: path, c: c, f: f, err: err})
			break
		}
	}
	return out
}

func collectFile(p *Process, path string, f *trust.File, room int64) (jitbundle.Entry, error) {
	size := f.Size
	if size > room {
		return jitbundle.Entry{}, fmt.Errorf("%s: %d bytes exceed the %d left for embedded JIT data", path, size, max(room, 0))
	}
	b, err := io.ReadAll(io.LimitReader(f, size))
	if err != nil {
		return jitbundle.Entry{}, fmt.Errorf("%s: %w", path, err)
	}
	st, err := f.Stat()
	mtime := int64(-1)
	if err == nil {
		mtime = st.ModTime().UnixNano()
	}
	return jitbundle.Entry{PID: p.PID, Path: path, MTime: mtime, Data: b}, nil
}

// Paths lists where the built-in handler named handler looks for p's JIT
// data files, in the order it tries them; nil for a handler that reads
// no files of its own. The daemon follows these files as they grow.
func Paths(p *Process, handler string) []string {
	for _, h := range Builtins() {
		if c, ok := h.(collector); ok && h.Name() == handler {
			return c.paths(p)
		}
	}
	return nil
}

// OpenData opens one of p's JIT data files after the trust checks the
// handlers apply (internal/trust, judged by p.UID).
func OpenData(p *Process, path string) (*trust.File, error) { return openTrusted(p, path) }
