package anon

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/jitprof/jitprof/internal/trust"
)

// data is one JIT data file a handler reads: copied into the recording or
// opened, after the trust checks, on disk.
type data struct {
	path     string
	embedded bool
	r        io.ReaderAt
	size     int64
	f        *os.File // nil when embedded
}

func (d *data) reader() io.Reader { return io.NewSectionReader(d.r, 0, d.size) }

func (d *data) close() {
	if d.f != nil {
		d.f.Close()
	}
}

// describe is the Resolver.Source of a handler reading d.
func (d *data) describe(handler string) string {
	if d.embedded {
		return handler + " " + d.path + " (embedded in the recording)"
	}
	return handler + " " + d.path
}

// findData returns the first of paths that p.Embedded holds or that exists
// on disk. Embedded data wins, also under another directory with the same
// base name, since the recorder may have seen the file through
// /proc/PID/root. Nothing found is an error wrapping ErrNoData that lists
// the paths tried; a file the trust checks refuse is an error wrapping
// trust.ErrUntrusted, and ends the search: a refused file is not a missing
// one, and what a later path holds is not what the JIT wrote.
func findData(p *Process, paths []string) (*data, error) {
	for _, path := range paths {
		if b, ok := p.Embedded[path]; ok {
			p.Reads.refused()
			return &data{path: path, embedded: true, r: bytes.NewReader(b), size: int64(len(b))}, nil
		}
	}
	keys := make([]string, 0, len(p.Embedded))
	for k := range p.Embedded {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, path := range paths {
		for _, k := range keys {
			if filepath.Base(k) == filepath.Base(path) {
				b := p.Embedded[k]
				p.Reads.refused()
				return &data{path: k, embedded: true, r: bytes.NewReader(b), size: int64(len(b))}, nil
			}
		}
	}
	for _, path := range paths {
		f, err := openTrusted(p, path)
		if errors.Is(err, fs.ErrNotExist) {
			p.Reads.absent(path)
			continue
		}
		if err != nil {
			p.Reads.refused()
			return nil, err
		}
		p.Reads.found(path, f.File, f.Size)
		return &data{path: path, r: f, size: f.Size, f: f.File}, nil
	}
	return nil, fmt.Errorf("%w: tried %s", ErrNoData, strings.Join(paths, ", "))
}

// openTrusted opens path, one of p's JIT data files, after the checks of
// internal/trust: owned by p.UID, a regular file with one link, within
// the size limit, reached without following a symlink; a path under
// p.Root is resolved inside that root, as the process sees it.
func openTrusted(p *Process, path string) (*trust.File, error) {
	rule := trust.Rule{Owner: p.UID, Force: p.Force}
	if p.Root != "" && p.Root != "/" {
		if rel, ok := strings.CutPrefix(path, p.Root+"/"); ok {
			return trust.OpenIn(p.Root, "/"+rel, rule)
		}
	}
	return trust.Open(path, rule)
}

// filePaths lists where a JIT data file that a JIT names by its own pid
// (name(pid), an absolute path inside the JIT's file system) can be.
// Inside a pid namespace the JIT knows only its inner pid, NSPID, and the
// file is under the process's Root; a host path with the inner pid would
// belong to some other process, so it is tried only outside containers.
func filePaths(p *Process, name func(pid int) string) []string {
	inContainer := p.NSPID != 0 && p.NSPID != p.PID
	var paths []string
	if p.Root != "" && p.Root != "/" {
		inner := p.PID
		if inContainer {
			inner = p.NSPID
		}
		paths = append(paths, filepath.Join(p.Root, name(inner)))
	}
	if !inContainer {
		paths = append(paths, name(p.PID))
	}
	return uniq(paths)
}

// pids are the pids p's JIT may write into its files.
func pids(p *Process) []uint64 {
	l := []uint64{uint64(p.PID)}
	if p.NSPID != 0 && p.NSPID != p.PID {
		l = append(l, uint64(p.NSPID))
	}
	return l
}

func uniq(l []string) []string {
	var out []string
	for _, s := range l {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }
