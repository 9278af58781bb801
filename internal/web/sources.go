package web

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/trust"
)

// pprof's source views (source, weblist) read the source files the
// profile names with os.Open, with jitprof's rights (root's, often),
// following symlinks, and search relative names in every parent of its
// search path. A user whose program's debug info names /etc/shadow would
// get it shown. So pprof never gets an original path: every source file
// name it sees (the functions' file names, the object tool's source
// lines) is that of a copy in a snapshot directory of jitprof's own,
// made through trust.OpenNamed (annotate.OpenSource) with the rights of
// the user whose data named the file, or from an archive's copies. A file that user may not read gets a name in the
// snapshot where nothing is, which pprof reports as missing.

const (
	// maxSourceFile bounds the copy of one source file, as annotate
	// bounds the source it reads.
	maxSourceFile = 8 << 20
	// maxSources bounds the copies of one recording's views together.
	maxSources = 256 << 20
	// sourceTrimPath is the trim_path pprof is given: its own default,
	// which no snapshot path starts with. Any trim_path turns off pprof's
	// guess of one, which would make a snapshot path relative (on finding
	// the search path's base name in it) and search it in the parents of
	// the snapshot directory, where any user may create files.
	sourceTrimPath = linux.SelfCwd
)

// sources is the snapshot of the source files of one recording's views:
// a private directory (0700), removed by close.
type sources struct {
	dir   string
	shown *regexp.Regexp // a copy's directories in a page: dir/N/

	open func(file string, as trust.Cred) (io.ReadCloser, error) // annotate.OpenSource or Options.OpenSource

	mu     sync.Mutex
	copies map[sourceKey]string // original and whose rights -> its path in dir
	size   int64                // bytes copied so far
}

type sourceKey struct {
	file string
	as   trust.Cred
}

func newSources(open func(file string, as trust.Cred) (io.ReadCloser, error)) (*sources, error) {
	dir, err := os.MkdirTemp("", "jitprof-web-src-") // mode 0700
	if err != nil {
		return nil, err
	}
	return &sources{dir: dir, shown: regexp.MustCompile(regexp.QuoteMeta(dir) + `/[0-9]+/`), open: open, copies: map[sourceKey]string{}}, nil
}

// unname takes the snapshot's directories out of a page of pprof's,
// which then names the source files as the profile does.
func (s *sources) unname(page []byte) []byte { return s.shown.ReplaceAll(page, []byte("/")) }

// path returns the name pprof is to know file by, a source file named by
// data whose word is as's: an absolute path in the snapshot, where file
// is copied the first time (up to maxSourceFile bytes) when as may read
// it. "" stays "".
func (s *sources) path(file string, as trust.Cred) string {
	if file == "" {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := sourceKey{file, as}
	if p, ok := s.copies[k]; ok {
		return p
	}
	// A directory per copy keeps the original path readable in pprof's
	// pages; cleaned under "/", its ".." cannot leave it.
	p := filepath.Join(s.dir, strconv.Itoa(len(s.copies)+1), filepath.Clean("/"+file))
	s.copies[k] = p
	if s.size < maxSources {
		n, err := s.copy(p, file, as)
		s.size += n
		if err != nil {
			os.Remove(p) // a copy cut short is no copy: pprof says the file is missing
		}
	}
	return p
}

// copy copies file, read with as's rights, to dst.
func (s *sources) copy(dst, file string, as trust.Cred) (int64, error) {
	src, err := s.open(file, as)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return 0, err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(src, min(maxSourceFile, maxSources-s.size)))
	return n, errors.Join(err, out.Close())
}

// close removes the snapshot.
func (s *sources) close() error { return os.RemoveAll(s.dir) }
