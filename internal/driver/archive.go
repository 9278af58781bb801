package driver

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/annotate"
	"github.com/jitprof/jitprof/internal/archive"
	"github.com/jitprof/jitprof/internal/jitbundle"
	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/outfile"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/trust"
	"github.com/jitprof/jitprof/perfdata"
)

// Files says where a source's images, debug files, kernel symbols and
// source files are read: the machine's own when zero, an archive's for
// a source OpenArchive returns (which a Source says by a method Files).
type Files struct {
	// Symbolizer finds the images and kernel symbols; nil means the
	// machine's.
	Symbolizer *symbolize.Symbolizer
	// OpenSource opens a source file an image's debug info names; nil
	// means the machine's (annotate.OpenSource).
	OpenSource func(file string, as trust.Cred) (io.ReadCloser, error)
	// Proc is where JIT handlers look for the processes still running:
	// this machine's (the zero Proc), or, for an archive, nowhere.
	Proc linux.Proc
}

// OwnFile is a file of a source itself, archived beside what its
// reports read: the recording, or a file of a session's directory.
type OwnFile struct {
	Name string // its entry's name (archive.RecordingName, session/NAME/...)
	Path string
	Role string // archive.RoleRecording or RoleSession
}

// maxArchivedSource bounds a source file copied into an archive, as
// annotate and the web view bound what they read of one.
const maxArchivedSource = 8 << 20

// Archive writes to w an archive (internal/archive) of src, whose own
// files are own: those, and every file a report, annotation or web view
// of src reads on this machine. It loads src as they do, with source
// lines, addresses and JIT code named, then archives each image samples
// were in and the debug file it was read with, the source files
// annotate and the source view read, the kernel's symbols and the vDSO.
// Images are read with the rights of a process that mapped them, as the
// recorder read their build-ids, or, where the recording does not say
// who a process was (jitprof record says it of processes that ran JIT
// code; perf says it of none), with the rights of the owner of the
// first of own, whose data names them; what could not be read is listed
// in the manifest's Missing, and a report of the archive lacks it too. kind is
// archive.KindRecording or KindSession; name names what is archived.
func Archive(ctx context.Context, src Source, kind, name string, own []OwnFile, o Options, w io.Writer) (*archive.Manifest, error) {
	var creds map[uint32]trust.Cred
	if r, ok := src.(*Recording); ok {
		creds = recordedCreds(r.f)
	}
	o.Lines, o.Addresses, o.LeafOnly = true, true, false
	o.JIT.Samples = true
	sym := symbolize.New(symbolize.Options{})
	o.Symbolizer = sym
	l, err := Load(ctx, src, o)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	c := &collector{m: &archive.Manifest{Kind: kind, Source: name}, names: map[string]bool{}}
	for _, f := range own {
		c.add(archive.File{Name: f.Name, Role: f.Role, Path: f.Path}, func() (io.ReadCloser, int64, error) {
			tf, err := trust.Open(f.Path, trust.Rule{Owner: trust.UnknownOwner, Force: o.JIT.Force})
			if err != nil {
				return nil, 0, err
			}
			return tf, tf.Size, nil
		})
	}
	p := l.Profile
	fallback := trust.Nobody
	if len(own) > 0 {
		var st unix.Stat_t
		if err := unix.Stat(own[0].Path, &st); err == nil {
			fallback = trust.CredOf(&st)
		}
	}
	imageCreds := imagesBy(p, creds, fallback)
	kernel := false
	srcCreds := map[int32]trust.Cred{}
	for i := range p.Images {
		im := &p.Images[i]
		switch {
		case im.Kind == profile.ImageKernel:
			kernel = true
		case im.Kind != profile.ImageFile:
		case im.Name == symbolize.VDSOPath:
			c.vdso(im.BuildID)
		default:
			if img := c.image(sym, im, imageCreds[int32(i)]); img != nil {
				srcCreds[int32(i)] = img.SourceCred()
			}
		}
	}
	if kernel {
		c.kallsyms(p)
	}
	c.sources(p, sym, srcCreds)
	slices.SortStableFunc(c.m.Files, func(a, b archive.File) int { return cmpRole(a.Role, b.Role) })
	slices.SortStableFunc(c.open, func(a, b pending) int { return cmpRole(a.role, b.role) })
	aw, err := archive.NewWriter(w, c.m)
	if err != nil {
		return nil, err
	}
	for _, f := range c.open {
		rc, _, err := f.open()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		err = aw.Add(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
	}
	return c.m, aw.Close()
}

// roleOrder puts what a reader needs first first: the recording or
// session, then what symbolizes it.
var roleOrder = []string{archive.RoleRecording, archive.RoleSession, archive.RoleKallsyms, archive.RoleVDSO, archive.RoleImage, archive.RoleDebug, archive.RoleSource}

func cmpRole(a, b string) int { return slices.Index(roleOrder, a) - slices.Index(roleOrder, b) }

// recordedCreds is who each process of a recording ran as, from the
// JIT data jitprof record embedded (perf's recordings have none).
func recordedCreds(f *perfdata.File) map[uint32]trust.Cred {
	b, err := jitbundle.Load(f)
	if err != nil || b == nil {
		return nil
	}
	out := map[uint32]trust.Cred{}
	for _, p := range b.Processes {
		out[uint32(p.PID)] = trust.Cred{UID: p.UID, GID: p.GID}
	}
	return out
}

// imagesBy picks, for each image samples were in, the user of a process
// whose samples were in it, fallback when none is known: whose rights
// it is archived with.
func imagesBy(p *profile.Profile, creds map[uint32]trust.Cred, fallback trust.Cred) map[int32]trust.Cred {
	out := map[int32]trust.Cred{}
	var stack []int32
	for _, e := range p.Entries {
		c, known := creds[p.Threads[e.Thread].PID]
		if !known {
			c = fallback
		}
		for _, fr := range p.Stack(stack[:0], e.Stack) {
			im := p.FuncOf(fr).Image
			if _, seen := out[im]; !seen || known {
				out[im] = c
			}
		}
	}
	return out
}

// collector gathers an archive's entries: each with what opens it when
// the archive is written.
type collector struct {
	m     *archive.Manifest
	names map[string]bool
	open  []pending
}

type pending struct {
	name, role string
	open       func() (io.ReadCloser, int64, error)
}

// add lists f, whose contents open gives, unless an entry of its name
// is listed already; what does not open is missing.
func (c *collector) add(f archive.File, open func() (io.ReadCloser, int64, error)) {
	c.addFound(f, open, false)
}

// addFound is add; with quiet, a file that does not exist is not
// missing, as a source file a compiler named relative to where it ran
// is not: no report reads it here either.
func (c *collector) addFound(f archive.File, open func() (io.ReadCloser, int64, error), quiet bool) {
	if c.names[f.Name] {
		return
	}
	rc, size, err := open()
	if quiet && errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		c.missing(f.Path, err)
		return
	}
	rc.Close()
	c.names[f.Name] = true
	f.Size = size
	c.m.Files = append(c.m.Files, f)
	c.open = append(c.open, pending{f.Name, f.Role, open})
}

func (c *collector) missing(path string, err error) {
	c.m.Missing = append(c.m.Missing, archive.Missing{Path: path, Why: err.Error()})
}

// named opens a file data named with c's rights (trust.OpenNamed), up to
// limit bytes (0: no bound).
func named(path string, as trust.Cred, limit int64) func() (io.ReadCloser, int64, error) {
	return func() (io.ReadCloser, int64, error) {
		f, err := trust.OpenNamed(path, as, limit)
		if err != nil {
			return nil, 0, err
		}
		return f, f.Size, nil
	}
}

// image archives the file image im was read from, at the path the
// recording names, and its separate debug file, where a reader of the
// archive looks first: by build-id under /usr/lib/debug.
func (c *collector) image(sym *symbolize.Symbolizer, im *profile.Image, as trust.Cred) *symbolize.Image {
	img, err := sym.OpenAs(im.Name, im.BuildID, as)
	if err != nil {
		c.missing(im.Name, err)
		return nil
	}
	c.add(archive.File{Name: archive.RootName(im.Name), Role: archive.RoleImage, Path: im.Name, BuildID: img.BuildID()},
		named(img.Path(), fileCred(img.Path(), im.Name, as), 0))
	if d := img.DebugPath(); d != "" {
		name := archive.RootName(d)
		if id := img.BuildID(); len(id) > 2 {
			name = archive.RootName(filepath.Join("/usr/lib/debug/.build-id", id[:2], id[2:]+".debug"))
		}
		c.add(archive.File{Name: name, Role: archive.RoleDebug, Path: d, BuildID: img.BuildID()}, named(d, fileCred(d, im.Name, as), 0))
	}
	return img
}

// fileCred is whose rights a file an image was read from is copied
// with: the mapping process's user for the recorded path and files
// beside it (a debug file its .gnu_debuglink names), as symbolize reads
// them; jitprof's for files found by build-id, in directories only root
// writes.
func fileCred(path, recorded string, as trust.Cred) trust.Cred {
	if path == recorded || filepath.Dir(path) == filepath.Dir(recorded) || strings.HasPrefix(path, filepath.Dir(recorded)+"/.debug/") {
		return as
	}
	return trust.Unknown
}

// vdso archives the running vDSO, if it is the recording's.
func (c *collector) vdso(want string) {
	b, err := linux.VDSO()
	if err == nil {
		var img *symbolize.Image
		if img, err = symbolize.LoadReader(symbolize.VDSOPath, bytes.NewReader(b), symbolize.LoadOptions{}); err == nil && want != "" && img.BuildID() != want {
			err = fmt.Errorf("the running vDSO has build-id %s, the recording's %s (archive on the machine and boot that recorded it)", img.BuildID(), want)
		}
	}
	if err != nil {
		c.missing(symbolize.VDSOPath, err)
		return
	}
	c.add(archive.File{Name: archive.VDSOName, Role: archive.RoleVDSO, Path: symbolize.VDSOPath},
		func() (io.ReadCloser, int64, error) { return io.NopCloser(bytes.NewReader(b)), int64(len(b)), nil })
}

// kallsyms archives the running kernel's symbols, if it is the
// recording's kernel.
func (c *collector) kallsyms(p *profile.Profile) {
	b, err := linux.Kallsyms()
	if err == nil {
		var want string
		for _, im := range p.Images {
			if im.Name == "[kernel.kallsyms]" {
				want = im.BuildID
			}
		}
		notes, nerr := linux.KernelNotes()
		if got := symbolize.NotesBuildID(notes, binary.NativeEndian); nerr == nil && want != "" && got != want {
			err = fmt.Errorf("the running kernel has build-id %s, the recording's %s (archive on the machine and boot that recorded it)", got, want)
		}
	}
	if err != nil {
		c.missing(linux.KallsymsPath, err)
		return
	}
	c.add(archive.File{Name: archive.KallsymsName, Role: archive.RoleKallsyms, Path: linux.KallsymsPath},
		func() (io.ReadCloser, int64, error) { return io.NopCloser(bytes.NewReader(b)), int64(len(b)), nil })
}

// sources archives the source files annotate reads (of every function
// with samples) and those the web view's source view reads (each
// function's file), with the rights their images' owners give.
func (c *collector) sources(p *profile.Profile, sym *symbolize.Symbolizer, creds map[int32]trust.Cred) {
	type key struct {
		file string
		as   trust.Cred
	}
	var files []key
	seen := map[key]bool{}
	note := func(file string, as trust.Cred) {
		if k := (key{file, as}); file != "" && !seen[k] {
			seen[k] = true
			files = append(files, k)
		}
	}
	record := func(file string, as trust.Cred) (io.ReadCloser, error) {
		note(file, as)
		return nil, errors.New("archiving: not read")
	}
	// What annotate asks for is every file it would show lines of; its
	// output, without them, is not wanted.
	_ = annotate.Write(io.Discard, p, annotate.Options{Source: true, Symbolizer: sym, OpenSource: record})
	for _, f := range p.Funcs {
		if as, ok := creds[f.Image]; ok {
			note(f.File, as)
		}
	}
	for _, k := range files {
		c.addFound(archive.File{Name: archive.RootName(k.file), Role: archive.RoleSource, Path: k.file}, named(k.file, k.as, maxArchivedSource), true)
	}
}

// OpenArchive opens an archive jitprof archive wrote, given on the
// command line (trust.OpenRecording's rule), into a private directory
// it removes on Close, and returns the Source of what it holds: the
// recording, or the session that openSession opens from the sessions
// directory and name given. The source's Files are the archive's: no
// file of this machine is read for it.
func OpenArchive(path string, force bool, openSession func(dir, name string) (Source, error)) (Source, error) {
	f, err := trust.OpenRecording(path, force)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dir, err := os.MkdirTemp("", "jitprof-archive-")
	if err != nil {
		return nil, err
	}
	a := &archived{path: path, dir: dir}
	m, err := archive.Extract(f, dir, archive.DefaultLimits)
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, ms := range m.Missing {
		a.warnings = append(a.warnings, fmt.Sprintf("the archive lacks %s: %s", ms.Path, ms.Why))
	}
	switch m.Kind {
	case archive.KindRecording:
		a.Source, err = OpenRecording(filepath.Join(dir, archive.RecordingName), false)
	case archive.KindSession:
		a.Source, err = openSession(filepath.Join(dir, archive.SessionDir), m.Source)
	}
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// archived is the Source of an archive: what it holds, read with its
// files.
type archived struct {
	Source
	path, dir string
	warnings  []string
}

func (a *archived) Name() string { return a.path }

func (a *archived) Warnings() []string {
	if a.Source == nil {
		return a.warnings
	}
	return append(slices.Clone(a.warnings), a.Source.Warnings()...)
}

func (a *archived) Close() error {
	var err error
	if a.Source != nil {
		err = a.Source.Close()
	}
	return errors.Join(err, os.RemoveAll(a.dir))
}

// Files are the archive's: images and debug files under its root
// directory (never a build-id cache of this machine), its kernel
// symbols and vDSO, its copies of source files, and no live process.
func (a *archived) Files() Files {
	root := filepath.Join(a.dir, archive.RootDir)
	return Files{
		Symbolizer: symbolize.New(symbolize.Options{Root: root, BuildIDCaches: []string{},
			Kallsyms: filepath.Join(a.dir, archive.KallsymsName), VDSO: filepath.Join(a.dir, archive.VDSOName)}),
		OpenSource: func(file string, _ trust.Cred) (io.ReadCloser, error) {
			r, err := os.OpenRoot(a.dir)
			if err != nil {
				return nil, err
			}
			defer r.Close()
			return r.Open(archive.RootName(file))
		},
		Proc: linux.Proc{Root: filepath.Join(a.dir, "proc")}, // nothing is there
	}
}

// SessionFiles lists the files of session name of the sessions
// directory dir, as an archive holds them (under session/samples/NAME):
// regular files only; a symlink or anything else there is not the
// daemon's and is left out.
func SessionFiles(dir, name string) ([]OwnFile, error) {
	top := filepath.Join(dir, "samples", name)
	var out []OwnFile
	err := filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out = append(out, OwnFile{Name: archive.SessionDir + "/" + filepath.ToSlash(rel), Path: p, Role: archive.RoleSession})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", name, err)
	}
	return out, nil
}

// WriteArchive writes Archive's archive to the file out: to a new file
// beside it, renamed over out once whole, so that neither a link at out
// nor a failure leaves anything but the old file or the new one. The
// file is its owner's alone (0600): it holds copies of binaries and
// source files that other users may not be able to read.
func WriteArchive(ctx context.Context, src Source, kind, name string, own []OwnFile, o Options, out string) (*archive.Manifest, error) {
	f, err := outfile.Create(out, 0o600)
	if err != nil {
		src.Close()
		return nil, err
	}
	m, err := Archive(ctx, src, kind, name, own, o, f)
	if err != nil {
		f.Abort()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return m, nil
}
