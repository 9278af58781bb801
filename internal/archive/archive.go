package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// ManifestName is the name of the manifest, the archive's first entry.
const ManifestName = "jitprof-archive.json"

// Version is the manifest's version this package writes and reads.
const Version = 1

// The kinds of archive.
const (
	KindRecording = "recording"
	KindSession   = "session"
)

// The roles of the entries.
const (
	RoleRecording = "recording" // perf.data
	RoleSession   = "session"   // a file of the session's directory
	RoleImage     = "image"     // an executable or library samples were in
	RoleDebug     = "debug"     // a separate debug file of an image
	RoleSource    = "source"    // a source file an image's debug info names
	RoleKallsyms  = "kallsyms"  // the kernel's symbols
	RoleVDSO      = "vdso"      // the vDSO image
)

// The names of entries and the directories entries live under.
const (
	RecordingName = "perf.data"
	KallsymsName  = "kallsyms"
	VDSOName      = "vdso"
	RootDir       = "root"
	SessionDir    = "session"
)

// Manifest says what an archive holds.
type Manifest struct {
	Version int    `json:"version"`
	Kind    string `json:"kind"`
	// Source names what was archived: the recording's path, or the
	// session's name.
	Source string `json:"source"`
	Files  []File `json:"files"`
	// Missing lists what a report reads that could not be archived, and
	// why: a report of the archive lacks it too.
	Missing []Missing `json:"missing,omitempty"`
}

// File is an entry of the archive.
type File struct {
	Name    string `json:"name"`
	Role    string `json:"role"`
	Path    string `json:"path,omitempty"` // where it was, for images, debug and source files
	BuildID string `json:"build_id,omitempty"`
	Size    int64  `json:"size"`
}

// Missing is a file a report reads that the archive lacks.
type Missing struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// RootName is the entry name of a file that was at path p (absolute).
func RootName(p string) string { return RootDir + path.Clean("/"+p) }

// Limits bound what a Reader accepts.
type Limits struct {
	Entries  int   // entries, the manifest's included
	FileSize int64 // bytes of one entry
	Total    int64 // bytes of all entries
}

// DefaultLimits are far above an archive of a real recording (a
// system-wide recording hits a few hundred images; debug files of large
// programs are a few hundred megabytes) and keep a crafted one from
// filling the disk.
var DefaultLimits = Limits{Entries: 1 << 16, FileSize: 4 << 30, Total: 64 << 30}

// maxManifest bounds the manifest: a few hundred bytes per entry.
const maxManifest = 64 << 20

// ErrFormat is wrapped by every error about an archive's contents.
var ErrFormat = errors.New("not a valid jitprof archive")

func formatErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, args...))
}

// ValidName reports whether an entry may be called name: a clean,
// relative path under one of the archive's names, of printable
// characters.
func ValidName(name string) bool {
	if len(name) > 4096 || !fs.ValidPath(name) || name == "." || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return false
	}
	first, rest, _ := strings.Cut(name, "/")
	switch first {
	case RecordingName, KallsymsName, VDSOName:
		return rest == ""
	case RootDir, SessionDir:
		return rest != ""
	}
	return false
}

// Writer writes an archive: the manifest, then each entry in its order.
type Writer struct {
	gz *gzip.Writer
	tw *tar.Writer
	m  *Manifest
	i  int // the next entry to write
}

// NewWriter writes m, every entry of which must then be given to Add in
// order, to w.
func NewWriter(w io.Writer, m *Manifest) (*Writer, error) {
	m.Version = Version
	seen := map[string]bool{}
	for _, f := range m.Files {
		if !ValidName(f.Name) || seen[f.Name] || f.Size < 0 {
			return nil, fmt.Errorf("archive: bad entry %q", f.Name)
		}
		seen[f.Name] = true
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	if err := writeEntry(tw, ManifestName, bytes.NewReader(b), int64(len(b))); err != nil {
		return nil, err
	}
	return &Writer{gz: gz, tw: tw, m: m}, nil
}

// Add writes the next entry's contents: exactly its Size bytes of r.
func (w *Writer) Add(r io.Reader) error {
	if w.i >= len(w.m.Files) {
		return errors.New("archive: more entries than the manifest lists")
	}
	f := w.m.Files[w.i]
	w.i++
	return writeEntry(w.tw, f.Name, r, f.Size)
}

func writeEntry(tw *tar.Writer, name string, r io.Reader, size int64) error {
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o644, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("archive: %s: %w", name, err)
	}
	n, err := io.Copy(tw, io.LimitReader(r, size))
	if err == nil && n != size {
		err = fmt.Errorf("%d bytes, %d expected (did the file change?)", n, size)
	}
	if err != nil {
		return fmt.Errorf("archive: %s: %w", name, err)
	}
	return nil
}

// Close ends the archive; every entry must have been added.
func (w *Writer) Close() error {
	if w.i != len(w.m.Files) {
		return fmt.Errorf("archive: %d of %d entries written", w.i, len(w.m.Files))
	}
	if err := w.tw.Close(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return w.gz.Close()
}

// Reader reads an archive's entries, each checked against the manifest
// and the limits before it is returned.
type Reader struct {
	tr     *tar.Reader
	m      Manifest
	lim    Limits
	byName map[string]File
	seen   map[string]bool
	total  int64
	n      int
}

// NewReader reads the manifest at the start of r.
func NewReader(r io.Reader, lim Limits) (*Reader, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, formatErr("%v", err)
	}
	tr := tar.NewReader(gz)
	hdr, err := tr.Next()
	if err != nil {
		return nil, formatErr("no manifest: %v", err)
	}
	if hdr.Name != ManifestName || hdr.Typeflag != tar.TypeReg || hdr.Size < 0 || hdr.Size > maxManifest {
		return nil, formatErr("the first entry is not a manifest of %d bytes at most", maxManifest)
	}
	rd := &Reader{tr: tr, lim: lim, byName: map[string]File{}, seen: map[string]bool{}, n: 1}
	dec := json.NewDecoder(io.LimitReader(tr, hdr.Size))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rd.m); err != nil {
		return nil, formatErr("manifest: %v", err)
	}
	if rd.m.Version != Version {
		return nil, formatErr("manifest version %d; this jitprof reads version %d", rd.m.Version, Version)
	}
	if rd.m.Kind != KindRecording && rd.m.Kind != KindSession {
		return nil, formatErr("kind %q", rd.m.Kind)
	}
	if len(rd.m.Files) >= lim.Entries {
		return nil, formatErr("%d entries, over the limit of %d", len(rd.m.Files), lim.Entries)
	}
	var total int64
	for _, f := range rd.m.Files {
		if !ValidName(f.Name) {
			return nil, formatErr("bad entry name %q", f.Name)
		}
		if _, dup := rd.byName[f.Name]; dup {
			return nil, formatErr("entry %q listed twice", f.Name)
		}
		if f.Size < 0 || f.Size > lim.FileSize {
			return nil, formatErr("entry %q: size %d out of bounds (limit %d)", f.Name, f.Size, lim.FileSize)
		}
		if total += f.Size; total > lim.Total {
			return nil, formatErr("entries of more than %d bytes in all", lim.Total)
		}
		rd.byName[f.Name] = f
	}
	return rd, nil
}

// Manifest returns the archive's manifest, checked.
func (r *Reader) Manifest() *Manifest { return &r.m }

// Next returns the next entry and a reader of its contents, valid until
// the next call; io.EOF after the last. An entry must be a regular file
// the manifest lists, of the size it says, met once.
func (r *Reader) Next() (File, io.Reader, error) {
	hdr, err := r.tr.Next()
	if err == io.EOF {
		if len(r.seen) != len(r.m.Files) {
			return File{}, nil, formatErr("%d of the %d entries the manifest lists are in the archive", len(r.seen), len(r.m.Files))
		}
		return File{}, nil, io.EOF
	}
	if err != nil {
		return File{}, nil, formatErr("%v", err)
	}
	if r.n++; r.n > r.lim.Entries {
		return File{}, nil, formatErr("over %d entries", r.lim.Entries)
	}
	f, ok := r.byName[hdr.Name]
	switch {
	case !ok:
		return File{}, nil, formatErr("entry %q is not in the manifest", hdr.Name)
	case hdr.Typeflag != tar.TypeReg:
		return File{}, nil, formatErr("entry %q is not a regular file (type %q)", hdr.Name, hdr.Typeflag)
	case hdr.Size != f.Size:
		return File{}, nil, formatErr("entry %q has %d bytes, the manifest says %d", hdr.Name, hdr.Size, f.Size)
	case r.seen[hdr.Name]:
		return File{}, nil, formatErr("entry %q is in the archive twice", hdr.Name)
	}
	r.seen[hdr.Name] = true
	r.total += f.Size
	return f, &exact{r: r.tr, n: f.Size, name: f.Name}, nil
}

// exact reads exactly n bytes, an error if fewer are there.
type exact struct {
	r    io.Reader
	n    int64
	name string
}

func (e *exact) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), e.n)]
	n, err := e.r.Read(p)
	e.n -= int64(n)
	if err == io.EOF && e.n > 0 {
		err = formatErr("entry %q is cut short", e.name)
	}
	return n, err
}

// Extract reads every entry of r into dir, which must exist and be
// empty, as the files of the names they have, through an os.Root: no
// entry can write outside dir or over another. It returns the manifest.
func Extract(r io.Reader, dir string, lim Limits) (*Manifest, error) {
	rd, err := NewReader(r, lim)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	defer root.Close()
	for {
		f, data, err := rd.Next()
		if err == io.EOF {
			return rd.Manifest(), nil
		}
		if err != nil {
			return nil, err
		}
		if d := path.Dir(f.Name); d != "." {
			if err := root.MkdirAll(d, 0o700); err != nil {
				return nil, fmt.Errorf("archive: %s: %w", f.Name, err)
			}
		}
		out, err := root.OpenFile(f.Name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("archive: %s: %w", f.Name, err)
		}
		_, err = io.Copy(out, data)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("archive: %s: %w", f.Name, err)
		}
	}
}
