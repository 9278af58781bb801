package anon

import (
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
	// used is the part of f, the first size bytes of a file of the
	// handler's, worth keeping, to be streamed into the recording.
	used(f *trust.File, size int64) (jitbundle.Source, error)
}

func (perfmapHandler) paths(p *Process) []string {
	return filePaths(p, func(pid int) string { return "/tmp/perf-" + itoa(pid) + ".map" })
}
func (perfmapHandler) used(f *trust.File, size int64) (jitbundle.Source, error) {
	return fileSource{f, size}, nil
}

func (jitdumpHandler) paths(p *Process) []string { return jitdumpPaths(p) }
func (jitdumpHandler) used(f *trust.File, size int64) (jitbundle.Source, error) {
	return fileSource{f, size}, nil
}

func (jitlogHandler) paths(p *Process) []string { return jitlogPaths(p) }

// used keeps a jitlog database up to its last record: writers grow the
// file ahead of need, and the zeros past the records are not data.
func (jitlogHandler) used(f *trust.File, size int64) (jitbundle.Source, error) {
	r, err := jitlog.NewReader(f, size)
	if err != nil {
		return fileSource{f, size}, nil
	}
	for r.Next() {
	}
	if end := r.Offset(); end > 0 && end <= size {
		size = end
	}
	return fileSource{f, size}, nil
}

// paths is where the log of PYPYLOG is, when the recorder knows the
// variable: PyPy writes one per process, "%d" standing for its pid.
func (*pypyHandler) paths(p *Process) []string {
	if p.PyPyLog == "" || !p.IsPyPy() {
		return nil
	}
	var paths []string
	for _, pid := range pids(p) {
		paths = append(paths, strings.Replace(p.PyPyLog, "%d", itoa(int(pid)), 1))
	}
	return uniq(paths)
}

// used keeps the sections the pypy handler reads: the rest of a log (the
// GC's, the backend's dumps) can be most of it. They are found twice,
// once to know their size, once to write them, in the first size bytes
// of a log that PyPy only appends to.
func (*pypyHandler) used(f *trust.File, size int64) (jitbundle.Source, error) {
	n, err := pypylog.KeepTo(io.Discard, io.NewSectionReader(f, 0, size))
	if err != nil {
		return nil, err
	}
	return keptSource{f, size, n}, nil
}

// fileSource streams the first n bytes of a file.
type fileSource struct {
	f *trust.File
	n int64
}

func (s fileSource) Len() int64 { return s.n }
func (s fileSource) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, io.NewSectionReader(s.f, 0, s.n))
}
func (s fileSource) Close() error { return s.f.Close() }

// keptSource streams the PyPy sections kept of a log's first size bytes,
// n bytes of them.
type keptSource struct {
	f       *trust.File
	size, n int64
}

func (s keptSource) Len() int64 { return s.n }
func (s keptSource) WriteTo(w io.Writer) (int64, error) {
	return pypylog.KeepTo(w, io.NewSectionReader(s.f, 0, s.size))
}
func (s keptSource) Close() error { return s.f.Close() }

// Collect finds p's JIT data, the first existing file of each built-in
// handler that reads files, for jitprof record to embed in the recording
// (jitprof's perf.data section, see internal/jitbundle), so that reports
// name JIT code after /tmp is cleaned or on another machine. Files go
// through the same trust checks as when a report reads them, and a
// sparse one is refused (its copy would cost far more than the file); a
// file that fails them, or would take the total past limit bytes, is
// left out with an error saying so. The entries stream their data from
// the files, which they hold open: CloseSources closes them once the
// bundle is written.
func Collect(p *Process, limit int64) ([]jitbundle.Entry, []error) {
	var entries []jitbundle.Entry
	var errs []error
	var total int64
	for _, d := range dataFiles(p) {
		if d.err != nil {
			errs = append(errs, fmt.Errorf("pid %d: %s data not embedded: %w", p.PID, d.kind, d.err))
			continue
		}
		e, err := collectFile(p, d, limit-total)
		if err != nil {
			d.f.Close()
			errs = append(errs, fmt.Errorf("pid %d: %s data not embedded: %w", p.PID, d.kind, err))
			continue
		}
		total += e.Src.Len()
		entries = append(entries, e)
	}
	return entries, errs
}

// CloseSources closes the files the entries of Collect stream from.
func CloseSources(es []jitbundle.Entry) {
	for _, e := range es {
		if c, ok := e.Src.(io.Closer); ok {
			c.Close()
		}
	}
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

func collectFile(p *Process, d dataFile, room int64) (jitbundle.Entry, error) {
	size := d.f.Size
	if err := trust.CheckDense(d.f.File, d.path, 0, size); err != nil {
		return jitbundle.Entry{}, err
	}
	src, err := d.c.used(d.f, size)
	if err != nil {
		return jitbundle.Entry{}, fmt.Errorf("%s: %w", d.path, err)
	}
	if n := src.Len(); n > room {
		return jitbundle.Entry{}, fmt.Errorf("%s: %d bytes exceed the %d left for embedded JIT data", d.path, n, max(room, 0))
	}
	st, err := d.f.Stat()
	mtime := int64(-1)
	if err == nil {
		mtime = st.ModTime().UnixNano()
	}
	return jitbundle.Entry{PID: p.PID, Kind: d.kind, Path: d.path, MTime: mtime, Src: src}, nil
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
