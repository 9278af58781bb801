package symbolize

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/jitprof/jitprof/internal/trust"
)

// Options configure a [Symbolizer].
type Options struct {
	// Root is prepended to every recorded path and to DebugDirs, e.g.
	// /proc/PID/root for a process in another mount namespace. Through
	// /proc/PID/root the kernel resolves symlinks inside the namespace; in a
	// plain sysroot directory an absolute symlink still points at the host.
	Root string
	// DebugDirs hold separate debug files (.build-id/xx/yyyy.debug and
	// .gnu_debuglink targets). nil means /usr/lib/debug; empty means none.
	DebugDirs []string
	// BuildIDCaches are perf build-id caches (.build-id/xx/yyyy/elf and
	// <path>/<build-id>/elf), on the host, not under Root. nil means
	// $HOME/.debug; empty means none.
	BuildIDCaches []string
	// RawNames keeps symbol names mangled.
	RawNames bool
	// Kallsyms is the kernel symbol file; "" means /proc/kallsyms.
	Kallsyms string
	// VDSO is a file holding the vDSO image "[vdso]" is symbolized
	// from (an archive's); "" means the running process's.
	VDSO string
	// SymbolCache keeps the function tables of images with a build-id
	// in jitprof's cache directory (CacheDir), for later reports.
	SymbolCache bool
}

// Symbolizer finds and caches images. It is safe for concurrent use.
type Symbolizer struct {
	opts Options

	mu     sync.Mutex
	images map[imageKey]*imageSlot
	kernel *imageSlot
}

type imageKey struct {
	path, buildID string
	as            trust.Cred
	root          string // a live process's root (OpenIn); "" for the host's
}

// imageSlot lets concurrent callers wait for one load instead of repeating
// it; failures are cached too, so a missing file costs one stat per run.
type imageSlot struct {
	once sync.Once
	img  *Image
	kern *Kernel
	err  error
	// mapped says img's function table is mapped from the symbol
	// cache, set once it is loaded.
	mapped atomic.Bool
}

// loadedImage notes, once the slot's image is loaded, whether its
// function table is mapped from the symbol cache (ForgetImages).
func (sl *imageSlot) loadedImage() {
	if sl.img != nil {
		_, ok := sl.img.syms.(*mappedTable)
		sl.mapped.Store(ok)
	}
}

// VDSOPath is the name perf records for the vDSO mapping.
const VDSOPath = "[vdso]"

// New returns a Symbolizer.
func New(opts Options) *Symbolizer {
	if opts.DebugDirs == nil {
		opts.DebugDirs = []string{"/usr/lib/debug"}
	}
	if opts.BuildIDCaches == nil {
		opts.BuildIDCaches = []string{}
		if home, err := os.UserHomeDir(); err == nil {
			opts.BuildIDCaches = []string{filepath.Join(home, ".debug")}
		}
	}
	return &Symbolizer{opts: opts, images: map[imageKey]*imageSlot{}}
}

// ForgetImages lets go of the images read so far whose function tables
// were read into memory: a live view, whose machine maps new executables
// all the time, reads again those still sampled, and its memory does not
// grow with every image it ever saw. The kernel's symbols and the images
// whose tables are mapped from the symbol cache stay: a mapping lives as
// long as the process (its names are strings in it), and forgetting the
// image would only map its table again.
func (s *Symbolizer) ForgetImages() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, slot := range s.images {
		if !slot.mapped.Load() {
			delete(s.images, k) // one being loaded too: its callers hold it
		}
	}
}

// Open returns the image mapped from path with the given build-id (hex; ""
// when the recording has none), read with the rights of the user running
// jitprof. "[vdso]" is this boot's vDSO.
func (s *Symbolizer) Open(path, buildID string) (*Image, error) {
	return s.OpenAs(path, buildID, trust.Unknown)
}

// OpenAs is Open for an image that a process of c's mapped: the recorded
// path, and a debug file its .gnu_debuglink names beside it, are opened
// with c's rights (trust.OpenNamed), so that a process which mapped its
// own file at a path that names a root-only file on the host, in a mount
// namespace of its own, does not make jitprof read that file. Files found
// by build-id (debug directories, build-id caches) are opened with
// jitprof's rights: the recorded build-id, not a path, chose them.
func (s *Symbolizer) OpenAs(path, buildID string, c trust.Cred) (*Image, error) {
	key := imageKey{path, buildID, c, ""}
	s.mu.Lock()
	slot := s.images[key]
	if slot == nil {
		slot = &imageSlot{}
		s.images[key] = slot
	}
	s.mu.Unlock()
	slot.once.Do(func() {
		if path == VDSOPath && s.opts.VDSO != "" {
			// Named as the running one is, whatever file holds it.
			var b []byte
			if b, slot.err = os.ReadFile(s.opts.VDSO); slot.err == nil {
				slot.img, slot.err = LoadReader(VDSOPath, bytes.NewReader(b), LoadOptions{RawNames: s.opts.RawNames})
			}
			return
		}
		if path == VDSOPath {
			slot.img, slot.err = LoadVDSO(LoadOptions{RawNames: s.opts.RawNames})
			return
		}
		slot.img, slot.err = s.load(path, filepath.Join(s.opts.Root, path), buildID, c)
		slot.loadedImage()
	})
	return slot.img, slot.err
}

// Place is where a process that still runs sees its own files, and
// whose rights read them there.
type Place struct {
	// Root is the process's root, /proc/PID/root: a path under it is
	// resolved in the process's mount namespace.
	Root string
	// As is the process's user and group.
	As trust.Cred
}

// OpenIn is OpenAs for an image that a process still running mapped from
// a file the host's path does not give: one in a mount namespace of its
// own, or another file at that path. The recorded path is read under
// at.Root, as the process sees it (as perf reads such images, through
// /proc/PID/root), with at.As's rights (trust.OpenNamed), so that a
// process cannot make jitprof read a file its user could not; a
// recorded build-id must match, as for OpenAs.
func (s *Symbolizer) OpenIn(path, buildID string, at Place) (*Image, error) {
	if at.Root == "" || !filepath.IsAbs(path) {
		return s.OpenAs(path, buildID, at.As)
	}
	key := imageKey{path, buildID, at.As, at.Root}
	s.mu.Lock()
	slot := s.images[key]
	if slot == nil {
		slot = &imageSlot{}
		s.images[key] = slot
	}
	s.mu.Unlock()
	slot.once.Do(func() {
		slot.img, slot.err = s.load(path, at.Root+path, buildID, at.As)
		slot.loadedImage()
	})
	return slot.img, slot.err
}

// Kernel returns the kernel symbol table, loaded once.
func (s *Symbolizer) Kernel() (*Kernel, error) {
	s.mu.Lock()
	if s.kernel == nil {
		s.kernel = &imageSlot{}
	}
	slot := s.kernel
	s.mu.Unlock()
	slot.once.Do(func() {
		opts := LoadOptions{RawNames: s.opts.RawNames}
		if s.opts.Kallsyms == "" {
			slot.kern, slot.err = RunningKernel(opts)
			return
		}
		slot.kern, slot.err = LoadKallsyms(s.opts.Kallsyms, opts)
	})
	return slot.kern, slot.err
}

// load opens host (path as seen from here) and its debug file. A file whose
// build-id differs from want is replaced by a build-id-addressed copy, or
// rejected with ErrBuildIDMismatch.
func (s *Symbolizer) load(path, host, want string, c trust.Cred) (*Image, error) {
	main, err := openELF(host, c)
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == host {
		// Under a Root (an archive's directory, a process's root) a
		// report names the file as the recording does.
		pe.Path = path
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var found string
	if main != nil {
		found = buildID(main.File)
		if want != "" && found != want {
			main.Close()
			main = nil
		}
	}
	var debug *elfFile
	if main == nil {
		main, debug = s.byBuildID(path, want)
		switch {
		case main == nil && found != "":
			return nil, fmt.Errorf("%s: file has build-id %s, recording has %s: %w", host, found, want, ErrBuildIDMismatch)
		case main == nil && err != nil:
			return nil, err
		case main == nil:
			return nil, fmt.Errorf("%s: file has no build-id, recording has %s: %w", host, want, ErrBuildIDMismatch)
		}
		if debug == nil {
			// A debug-only file: its program headers still describe the
			// segments, so it serves for translation and symbols alike.
			return buildImageCached(main, nil, s.opts.RawNames, s.opts.SymbolCache, reopener(main.name, main.as))
		}
	} else if needsDebug(main.File) {
		debug = s.debugFile(main, host)
	}
	return buildImageCached(main, debug, s.opts.RawNames, s.opts.SymbolCache, reopener(main.name, main.as))
}

func reopener(name string, as trust.Cred) func() (*elfFile, error) {
	return func() (*elfFile, error) { return openELF(name, as) }
}

// needsDebug says whether a separate debug file could add anything.
func needsDebug(f *elf.File) bool {
	return f.Section(".symtab") == nil || !hasDWARF(f)
}

// byBuildID finds the image for want in the build-id caches (full copies
// of the binary) or, failing that, a debug file with that build-id.
func (s *Symbolizer) byBuildID(path, want string) (main, debug *elfFile) {
	if len(want) < 3 {
		return nil, nil
	}
	var full []string
	for _, c := range s.opts.BuildIDCaches {
		full = append(full,
			filepath.Join(c, ".build-id", want[:2], want[2:], "elf"),
			filepath.Join(c, path, want, "elf"))
	}
	for _, p := range full {
		if f := openWithID(p, want); f != nil {
			// A cache copy is owned by whoever ran perf, whatever
			// wrote the binary it copies.
			f.srcCred = trust.Nobody
			return f, s.debugByID(want)
		}
	}
	return s.debugByID(want), nil
}

// debugByID finds a separate debug file by build-id.
func (s *Symbolizer) debugByID(id string) *elfFile {
	if len(id) < 3 {
		return nil
	}
	var paths []string
	for _, d := range s.opts.DebugDirs {
		paths = append(paths, filepath.Join(s.opts.Root, d, ".build-id", id[:2], id[2:]+".debug"))
	}
	cached := len(paths)
	for _, c := range s.opts.BuildIDCaches {
		paths = append(paths, filepath.Join(c, ".build-id", id[:2], id[2:], "debug"))
	}
	for i, p := range paths {
		if f := openWithID(p, id); f != nil {
			if i >= cached {
				f.srcCred = trust.Nobody
			}
			return f
		}
	}
	return nil
}

// openWithID opens path if it is an ELF file with build-id id.
func openWithID(path, id string) *elfFile {
	f, err := openELF(path, trust.Unknown)
	if err != nil {
		return nil
	}
	if buildID(f.File) != id {
		f.Close()
		return nil
	}
	return f
}

// debugFile finds main's separate debug file: by build-id, then by
// .gnu_debuglink in GDB's order (same directory, .debug/, then each debug
// directory plus the binary's directory), checking the CRC32.
func (s *Symbolizer) debugFile(main *elfFile, host string) *elfFile {
	id := buildID(main.File)
	if f := s.debugByID(id); f != nil {
		return f
	}
	name, crc, ok := debugLink(main.File)
	if !ok {
		return nil
	}
	dir := filepath.Dir(host)
	paths := []string{filepath.Join(dir, name), filepath.Join(dir, ".debug", name)}
	relDir, err := filepath.Rel(s.opts.Root, dir)
	if s.opts.Root == "" {
		relDir, err = dir, nil
	}
	if err == nil {
		for _, d := range s.opts.DebugDirs {
			paths = append(paths, filepath.Join(s.opts.Root, d, relDir, name))
		}
	}
	for i, p := range paths {
		// Beside the binary, a debug file is found by a name the binary
		// gives; in the debug directories, by a name and a path only
		// root can write.
		as := main.as
		if i >= 2 {
			as = trust.Unknown
		}
		if got, ok := fileCRC(p, as); p == host || !ok || got != crc {
			continue
		}
		f, err := openELF(p, as)
		if err != nil {
			continue
		}
		if id != "" {
			if got := buildID(f.File); got != "" && got != id {
				f.Close()
				continue
			}
		}
		return f
	}
	return nil
}

// debugLink parses .gnu_debuglink: a NUL-terminated file name padded to 4
// bytes, then the CRC32 of the debug file.
func debugLink(f *elf.File) (string, uint32, bool) {
	sec := f.Section(".gnu_debuglink")
	if sec == nil {
		return "", 0, false
	}
	data, err := sec.Data()
	if err != nil {
		return "", 0, false
	}
	n := 0
	for n < len(data) && data[n] != 0 {
		n++
	}
	off := (n + 4) &^ 3
	if n == 0 || off+4 > len(data) {
		return "", 0, false
	}
	name := string(data[:n])
	if name != filepath.Base(name) {
		return "", 0, false
	}
	return name, f.ByteOrder.Uint32(data[off:]), true
}

// fileCRC returns the CRC32 (IEEE) of a file's contents, read with c's
// rights.
func fileCRC(path string, c trust.Cred) (uint32, bool) {
	f, err := trust.OpenNamed(path, c, 0)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, f); err != nil {
		return 0, false
	}
	return h.Sum32(), true
}
