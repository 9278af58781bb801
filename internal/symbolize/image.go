package symbolize

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/jitprof/jitprof/internal/trust"
	"github.com/ulikunitz/xz"
)

// Sentinel errors callers branch on.
var (
	// ErrBuildIDMismatch: the file at the recorded path is not the one that
	// was profiled, and no copy with the recorded build-id was found.
	ErrBuildIDMismatch = errors.New("build-id mismatch")
	// ErrMalformed: the file is not a well-formed ELF image.
	ErrMalformed = errors.New("malformed ELF")
	// ErrNoDebugInfo: the image has no DWARF, so no source lines or inlined frames.
	ErrNoDebugInfo = errors.New("no DWARF debug info")
	// ErrKptrRestrict: kallsyms shows every address as zero.
	ErrKptrRestrict = errors.New("kernel addresses hidden (kptr_restrict)")
)

// maxDebugData bounds the decompressed size of .gnu_debugdata, which is a
// few hundred KB in practice: a crafted file must not exhaust memory.
const maxDebugData = 64 << 20

// Image is one loaded executable image: its symbols, its segments for
// address translation and, on demand, its DWARF. It is safe for concurrent use.
type Image struct {
	path      string
	debugPath string
	buildID   string
	loads     []segment
	syms      symtab
	// srcCred is whose rights the source files its debug info names are
	// read with.
	srcCred trust.Cred
	// stripped says, when the image's only symbols are its dynamic ones,
	// what would name the rest.
	stripped string

	reopen func() (*elfFile, error) // the file the image was loaded from, again
	// reopenDebug opens the separate debug file again; nil without one.
	reopenDebug func() (*elfFile, error)
	// cacheKey names what the image's tables are made of (scacheKey),
	// "" when that cannot be said.
	cacheKey  string
	openDWARF func() (*dwarf.Data, uint64, error) // nil when no file has DWARF; also returns .debug_info's size
	dwOnce    sync.Once
	dw        *dwarfIndex
	dwErr     error
}

type segment struct{ off, filesz, vaddr uint64 }

// Path is the file the image was loaded from (which may be a build-id cache
// copy rather than the recorded path).
func (im *Image) Path() string { return im.path }

// Stripped says, for an image whose only symbols are the ones it exports
// (.dynsym: no .symtab, no MiniDebugInfo, no separate debug file found),
// where the symbols of its other functions would be: a report shows
// their samples as bare addresses and says this. "" for other images.
func (im *Image) Stripped() string { return im.stripped }

// SourceCred is whose rights the source files named by the image's
// debug info are to be read with (trust.OpenNamed): the owner of the file
// that holds the debug info, whose word the file names are, so a user's
// binary whose DWARF names /etc/shadow makes root's jitprof read nothing
// that user could not; for a copy from a build-id cache, whose origin is
// not known, Nobody.
func (im *Image) SourceCred() trust.Cred { return im.srcCred }

// DebugPath is the separate debug file merged into the image, or "".
func (im *Image) DebugPath() string { return im.debugPath }

// BuildID is the image's GNU build-id in lower-case hex, or "".
func (im *Image) BuildID() string { return im.buildID }

// NumSymbols is the number of distinct function addresses known.
func (im *Image) NumSymbols() int { return im.syms.count() }

// HasFunction reports whether a function of the image is named name, as
// Symbol.Name gives it. It reads every name: for error paths, not per
// sample.
func (im *Image) HasFunction(name string) bool { return im.syms.hasName(name) }

// LookupAddr returns the function containing the ELF virtual address addr.
func (im *Image) LookupAddr(addr uint64) (Symbol, bool) { return im.syms.lookup(addr) }

// LookupFileOffset returns the function containing the byte at file offset
// off. For a sample at ip in a mapping (start, pgoff), off = ip-start+pgoff.
func (im *Image) LookupFileOffset(off uint64) (Symbol, bool) {
	addr, ok := im.FileOffsetToAddr(off)
	if !ok {
		return Symbol{}, false
	}
	return im.syms.lookup(addr)
}

// LookupFileOffsetSpan is LookupFileOffset, and the span of file offsets
// [lo, hi), off's among them, that LookupFileOffset answers alike: the
// function's, within the segment that maps off (Kernel.LookupSpan).
func (im *Image) LookupFileOffsetSpan(off uint64) (sym Symbol, lo, hi uint64, ok bool) {
	for i, s := range im.loads {
		if off < s.off || off-s.off >= s.filesz {
			continue
		}
		sym, vlo, vhi, ok := im.syms.lookupSpan(off - s.off + s.vaddr)
		if !ok {
			return Symbol{}, 0, 0, false
		}
		vlo, vhi = max(vlo, s.vaddr), min(vhi, s.vaddr+s.filesz)
		lo, hi = vlo-s.vaddr+s.off, vhi-s.vaddr+s.off
		// FileOffsetToAddr takes the first segment that maps an
		// offset: those before this one keep theirs.
		for _, e := range im.loads[:i] {
			if e.off+e.filesz <= off {
				lo = max(lo, e.off+e.filesz)
			} else if e.off > off {
				hi = min(hi, e.off)
			}
		}
		return sym, lo, hi, true
	}
	return Symbol{}, 0, 0, false
}

// FileOffsetToAddr translates a file offset into an ELF virtual address
// through the PT_LOAD segment that maps it.
func (im *Image) FileOffsetToAddr(off uint64) (uint64, bool) {
	for _, s := range im.loads {
		if off >= s.off && off-s.off < s.filesz {
			return off - s.off + s.vaddr, true
		}
	}
	return 0, false
}

// Code reads size bytes of code at the ELF virtual address addr, from the
// executable section that holds them, in the file the image was loaded
// from (opened again as it was first opened).
func (im *Image) Code(addr, size uint64) (code []byte, err error) {
	f, err := im.reopen()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	defer catch(f.name, &err)
	if f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("%s: %v code: only x86-64 is disassembled", f.name, f.Machine)
	}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR == 0 || s.Type == elf.SHT_NOBITS || addr < s.Addr || addr+size > s.Addr+s.Size || addr+size < addr {
			continue
		}
		code = make([]byte, size)
		if _, err := s.ReadAt(code, int64(addr-s.Addr)); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", f.name, s.Name, err)
		}
		return code, nil
	}
	return nil, fmt.Errorf("%s: no executable section holds [%#x, %#x)", f.name, addr, addr+size)
}

// elfFile is an open ELF file and what closes it.
type elfFile struct {
	*elf.File
	name   string
	closer io.Closer
	// as is whose rights the file was opened with (trust.OpenNamed),
	// for reopening it; srcCred whose rights the source files its debug
	// info names are read with (Image.SourceCred).
	as, srcCred trust.Cred
}

func (f *elfFile) Close() error {
	if f.closer != nil {
		return f.closer.Close()
	}
	return nil
}

// catch turns a panic from debug/elf or debug/dwarf on crafted input into
// an error naming the file.
func catch(name string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: %w: %v", name, ErrMalformed, r)
	}
}

// openELF opens the ELF file at path with c's rights (trust.OpenNamed):
// only a regular file, never blocking, and, as root, only one that c
// could read.
func openELF(path string, c trust.Cred) (f *elfFile, err error) {
	tf, err := trust.OpenNamed(path, c, 0)
	if err != nil {
		return nil, err
	}
	file := tf.File
	defer func() {
		if err != nil {
			file.Close()
		}
	}()
	defer catch(path, &err)
	if err := checkTables(file, tf.Size); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrMalformed, err)
	}
	ef, err := elf.NewFile(file)
	if err != nil {
		return nil, notELF(path, err)
	}
	return &elfFile{File: ef, name: path, closer: file, as: c, srcCred: tf.Owner}, nil
}

func newELF(name string, r io.ReaderAt) (f *elfFile, err error) {
	defer catch(name, &err)
	if sized, ok := r.(interface{ Size() int64 }); ok {
		if err := checkTables(r, sized.Size()); err != nil {
			return nil, fmt.Errorf("%s: %w: %w", name, ErrMalformed, err)
		}
	}
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, notELF(name, err)
	}
	return &elfFile{File: ef, name: name}, nil
}

// notELF is the error for a file debug/elf refuses. Its own message
// quotes the file's bytes ("bad magic number '[114 111 111 116]'"), and
// the path is a recorded process's word: in a mount namespace of its own
// it can name any file of ours, so the bytes are left out.
func notELF(name string, err error) error {
	var fe *elf.FormatError
	if errors.As(err, &fe) {
		return fmt.Errorf("%s: %w: not a valid ELF file", name, ErrMalformed)
	}
	return fmt.Errorf("%s: %w: %w", name, ErrMalformed, err)
}

// checkTables refuses an ELF header whose program or section header table
// does not fit in the file's size bytes: debug/elf allocates what a table
// claims (up to 10 MB at a time) before it finds the file too short, which
// made each such crafted header cost milliseconds.
func checkTables(r io.ReaderAt, size int64) error {
	var h [64]byte
	if _, err := r.ReadAt(h[:], 0); err != nil && err != io.EOF {
		return fmt.Errorf("reading the ELF header: %w", err)
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if h[elf.EI_DATA] == byte(elf.ELFDATA2MSB) {
		bo = binary.BigEndian
	}
	var phoff, shoff uint64
	var at int // offset of e_phentsize
	switch elf.Class(h[elf.EI_CLASS]) {
	case elf.ELFCLASS64:
		phoff, shoff, at = bo.Uint64(h[0x20:]), bo.Uint64(h[0x28:]), 0x36
	case elf.ELFCLASS32:
		phoff, shoff, at = uint64(bo.Uint32(h[0x1c:])), uint64(bo.Uint32(h[0x20:])), 0x2a
	default:
		return nil // debug/elf says what is wrong
	}
	phent, phnum := uint64(bo.Uint16(h[at:])), uint64(bo.Uint16(h[at+2:]))
	shent, shnum := uint64(bo.Uint16(h[at+4:])), uint64(bo.Uint16(h[at+6:]))
	const pnXNum = 0xffff // PN_XNUM
	if phnum == pnXNum || shnum == 0 && shoff != 0 {
		// The counts are in section 0; one entry must fit at least.
		phnum, shnum = min(phnum, 1), max(shnum, 1)
	}
	fits := func(off, n, ent uint64) bool {
		return n == 0 || off <= uint64(size) && n*ent <= uint64(size)-off
	}
	if !fits(phoff, phnum, phent) {
		return fmt.Errorf("program headers at offset %d past the end of the file (%d bytes)", phoff, size)
	}
	if !fits(shoff, shnum, shent) {
		return fmt.Errorf("section headers at offset %d past the end of the file (%d bytes)", shoff, size)
	}
	return nil
}

// LoadOptions control how an image is read.
type LoadOptions struct {
	// RawNames keeps symbol names mangled.
	RawNames bool
}

// LoadReader loads an image from memory or any ReaderAt (the vDSO, tests);
// no separate debug files are looked for. name is used in errors.
func LoadReader(name string, r io.ReaderAt, opts LoadOptions) (*Image, error) {
	f, err := newELF(name, r)
	if err != nil {
		return nil, err
	}
	// Nothing says whose the bytes are: the sources they name are read
	// only as far as every user may.
	f.srcCred = trust.Nobody
	return buildImage(f, nil, opts.RawNames, func() (*elfFile, error) { return newELF(name, r) })
}

// Load loads the image at path, merging a separate debug file found next to
// it through .gnu_debuglink. Use a [Symbolizer] to find files by build-id.
func Load(path string, opts LoadOptions) (*Image, error) {
	return New(Options{RawNames: opts.RawNames, DebugDirs: []string{}, BuildIDCaches: []string{}}).load(path, path, "", trust.Unknown)
}

// buildImage reads symbols and segments from main and the optional debug
// file; reopen reopens the file holding DWARF later. The files are closed.
func buildImage(main, debug *elfFile, raw bool, reopen func() (*elfFile, error)) (im *Image, err error) {
	return buildImageCached(main, debug, raw, false, reopen)
}

// buildImageCached is buildImage that, with cache, maps the function
// table from jitprof's cache (scache.go) or keeps it there.
func buildImageCached(main, debug *elfFile, raw, cache bool, reopen func() (*elfFile, error)) (im *Image, err error) {
	defer main.Close()
	if debug != nil {
		defer debug.Close()
	}
	defer func() {
		if err != nil {
			im = nil
		}
	}()
	defer catch(main.name, &err)
	im = &Image{path: main.name, buildID: buildID(main.File), srcCred: main.srcCred, reopen: reopen}
	for _, p := range main.Progs {
		if p.Type == elf.PT_LOAD {
			im.loads = append(im.loads, segment{off: p.Off, filesz: p.Filesz, vaddr: p.Vaddr})
		}
	}
	if text := main.Section(".text"); text != nil && text.Type == elf.SHT_NOBITS {
		im.loads = guessOffsets(main.Progs)
	}
	if debug != nil {
		im.debugPath = debug.name
		im.reopenDebug = reopener(debug.name, debug.as)
	}
	key, keep := scacheKey(im.buildID, debug)
	if keep {
		im.cacheKey = key
	}
	keep = keep && cache
	if keep {
		im.syms = cachedSymbols(key, raw)
	}
	if im.syms == nil {
		t, err := imageTable(main, debug, raw)
		if err != nil {
			return nil, err
		}
		im.syms = t
		if keep {
			storeSymbols(key, t)
		}
	}
	mini := main.Section(".gnu_debugdata")
	hasMini := mini != nil && mini.Type != elf.SHT_NOBITS
	if debug == nil && !hasMini && main.Section(".symtab") == nil {
		im.stripped = strippedNote(main, im.buildID)
	}
	switch {
	case debug != nil && hasDWARF(debug.File):
		im.srcCred = debug.srcCred
		name, as := debug.name, debug.as
		im.openDWARF = func() (*dwarf.Data, uint64, error) { return dwarfOf(reopener(name, as)) }
	case hasDWARF(main.File):
		im.openDWARF = func() (*dwarf.Data, uint64, error) { return dwarfOf(reopen) }
	}
	return im, nil
}

// imageTable reads the function table of main, its MiniDebugInfo and its
// debug file.
func imageTable(main, debug *elfFile, raw bool) (*table, error) {
	cands, err := funcSymbols(main, true)
	if err != nil {
		return nil, err
	}
	cands = append(cands, pltSymbols(main.File)...)
	mini, err := miniDebugInfo(main)
	if err != nil {
		return nil, err
	}
	if mini != nil {
		more, err := funcSymbols(mini, false)
		if err != nil {
			return nil, err
		}
		cands = append(cands, more...)
	}
	if debug != nil {
		more, err := funcSymbols(debug, false)
		if err != nil {
			return nil, err
		}
		cands = append(cands, more...)
	}
	return newTable(cands, raw), nil
}

// strippedNote says where the symbols of a stripped image would be.
func strippedNote(f *elfFile, id string) string {
	const only = "only its exported symbols, which leave some samples unnamed: "
	if f.Section(".gnu_debuglink") == nil && id == "" {
		return only + "it was stripped without a separate debug file"
	}
	where := "its separate debug file is not installed"
	if len(id) > 2 {
		where = fmt.Sprintf("its debug file /usr/lib/debug/.build-id/%s/%s.debug is not installed", id[:2], id[2:])
	}
	return only + where + " (Debian ships it in the -dbgsym package of the image's package, from the debian-debug archive)"
}

// guessOffsets rebuilds the file layout of a debug-only file (objcopy
// --only-keep-debug), whose program headers keep addresses and sizes but not
// the offsets the binary had. It assumes the layout GNU ld and lld produce:
// segments packed in order, each at the first offset past the previous one
// that is congruent to its address modulo its alignment, the first at 0.
// That holds for the binaries seen here, but it is a guess: a binary laid out
// otherwise resolves file offsets wrongly from its debug file alone.
func guessOffsets(progs []*elf.Prog) []segment {
	var out []segment
	var next uint64
	for _, p := range progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		off := next
		if a := p.Align; a > 1 && a&(a-1) == 0 {
			off = next&^(a-1) | p.Vaddr&(a-1)
			if off < next {
				off += a
			}
		}
		out = append(out, segment{off: off, filesz: p.Memsz, vaddr: p.Vaddr})
		next = off + p.Memsz
	}
	return out
}

func hasDWARF(f *elf.File) bool {
	s := f.Section(".debug_info")
	return s != nil && s.Type != elf.SHT_NOBITS
}

func dwarfOf(open func() (*elfFile, error)) (d *dwarf.Data, infoSize uint64, err error) {
	f, err := open()
	if err != nil {
		return nil, 0, err
	}
	// debug/dwarf reads its sections into memory up front.
	defer f.Close()
	defer catch(f.name, &err)
	d, err = f.DWARF()
	if err != nil {
		return nil, 0, fmt.Errorf("%s: dwarf: %w", f.name, err)
	}
	return d, f.Section(".debug_info").Size, nil
}

// funcSymbols returns the function symbols of f's .symtab and, with dyn,
// its .dynsym: STT_FUNC, STT_GNU_IFUNC and sized objects in executable
// sections.
func funcSymbols(f *elfFile, dyn bool) ([]candidate, error) {
	var out []candidate
	add := func(typ elf.SectionType) error {
		var err error
		out, err = appendFuncSymbols(out, f, typ)
		if err != nil {
			return fmt.Errorf("%s: symbols: %w", f.name, err)
		}
		return nil
	}
	if err := add(elf.SHT_SYMTAB); err != nil {
		return nil, err
	}
	if dyn {
		if err := add(elf.SHT_DYNSYM); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendFuncSymbols appends the function symbols of f's first section of
// type typ to out. It reads the symbols in place, where debug/elf's
// Symbols makes a string and a struct of every symbol, most of them data
// or undefined, which was most of the time of loading a stripped libc's
// symbols; names are substrings of the one string table.
func appendFuncSymbols(out []candidate, f *elfFile, typ elf.SectionType) ([]candidate, error) {
	var sec *elf.Section
	for _, s := range f.Sections {
		if s.Type == typ {
			sec = s
			break
		}
	}
	if sec == nil {
		return out, nil
	}
	if int(sec.Link) >= len(f.Sections) || sec.Link == 0 {
		return nil, fmt.Errorf("%w: %s links to section %d", ErrMalformed, sec.Name, sec.Link)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sec.Name, err)
	}
	strs, err := f.Sections[sec.Link].Data()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Sections[sec.Link].Name, err)
	}
	strtab := string(strs)
	bo := f.ByteOrder
	size := elf.Sym64Size
	if f.Class == elf.ELFCLASS32 {
		size = elf.Sym32Size
	}
	if len(data)%size != 0 {
		return nil, fmt.Errorf("%w: %s is not a whole number of symbols", ErrMalformed, sec.Name)
	}
	out = slices.Grow(out, len(data)/size/2)
	for off := size; off+size <= len(data); off += size { // symbol 0 is the null symbol
		e := data[off : off+size]
		var nameOff uint32
		var info, other uint8
		var shndx elf.SectionIndex
		var value, sz uint64
		if size == elf.Sym64Size {
			nameOff, info, other = bo.Uint32(e), e[4], e[5]
			shndx = elf.SectionIndex(bo.Uint16(e[6:]))
			value, sz = bo.Uint64(e[8:]), bo.Uint64(e[16:])
		} else {
			nameOff = bo.Uint32(e)
			value, sz = uint64(bo.Uint32(e[4:])), uint64(bo.Uint32(e[8:]))
			info, other = e[12], e[13]
			shndx = elf.SectionIndex(bo.Uint16(e[14:]))
		}
		if value == 0 || nameOff == 0 || int(shndx) >= len(f.Sections) || shndx == elf.SHN_UNDEF {
			continue
		}
		sec := f.Sections[shndx]
		if sec.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		st := elf.ST_TYPE(info)
		vis := elf.ST_VISIBILITY(other)
		// perf also takes labels (NOTYPE, visible): ld.so's
		// _dl_start_user is one.
		label := st == elf.STT_NOTYPE && shndx != elf.SHN_ABS && vis != elf.STV_HIDDEN && vis != elf.STV_INTERNAL
		if !label && st != elf.STT_FUNC && st != elf.STT_GNU_IFUNC && (st != elf.STT_OBJECT || sz == 0) {
			continue
		}
		if int(nameOff) >= len(strtab) {
			continue
		}
		name := strtab[nameOff:]
		if i := strings.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if name == "" {
			continue
		}
		out = append(out, candidate{name: name, start: value, size: sz, bind: elf.ST_BIND(info), limit: sec.Addr + sec.Size, open: true})
	}
	return out, nil
}

// miniDebugInfo opens the xz-compressed ELF in .gnu_debugdata, or returns nil.
func miniDebugInfo(f *elfFile) (*elfFile, error) {
	sec := f.Section(".gnu_debugdata")
	if sec == nil || sec.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	name := f.name + ":.gnu_debugdata"
	xr, err := xz.NewReader(sec.Open())
	if err != nil {
		return nil, fmt.Errorf("%s: xz: %w", name, err)
	}
	data, err := io.ReadAll(io.LimitReader(xr, maxDebugData+1))
	if err != nil {
		return nil, fmt.Errorf("%s: xz: %w", name, err)
	}
	if len(data) > maxDebugData {
		return nil, fmt.Errorf("%s: %w: decompresses to more than %d bytes", name, ErrMalformed, maxDebugData)
	}
	return newELF(name, bytes.NewReader(data))
}

// buildID reads the NT_GNU_BUILD_ID note, from note sections or, for files
// without section headers, from PT_NOTE segments.
func buildID(f *elf.File) string {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		if data, err := s.Data(); err == nil {
			if id := noteBuildID(data, f.ByteOrder); id != "" {
				return id
			}
		}
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz > 1<<20 {
			continue
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err == nil {
			if id := noteBuildID(data, f.ByteOrder); id != "" {
				return id
			}
		}
	}
	return ""
}

func noteBuildID(data []byte, bo binary.ByteOrder) string {
	const ntGNUBuildID = 3
	align4 := func(n uint64) uint64 { return (n + 3) &^ 3 }
	for len(data) >= 12 {
		namesz, descsz, typ := uint64(bo.Uint32(data)), uint64(bo.Uint32(data[4:])), bo.Uint32(data[8:])
		data = data[12:]
		if align4(namesz) > uint64(len(data)) {
			return ""
		}
		name := data[:namesz]
		data = data[align4(namesz):]
		if align4(descsz) > uint64(len(data)) && descsz > uint64(len(data)) {
			return ""
		}
		desc := data[:descsz]
		data = data[min(align4(descsz), uint64(len(data))):]
		if typ == ntGNUBuildID && string(name) == "GNU\x00" {
			return hex.EncodeToString(desc)
		}
	}
	return ""
}

// FileBuildID returns the GNU build-id of the ELF file at path in
// lower-case hex, "" when it has none; the file is opened with c's rights
// (trust.OpenNamed).
func FileBuildID(path string, c trust.Cred) (string, error) {
	f, err := openELF(path, c)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return buildID(f.File), nil
}

// NotesBuildID returns the GNU build-id in ELF notes, such as the
// running kernel's (internal/linux.KernelNotes), in lower-case hex; ""
// when they hold none.
func NotesBuildID(notes []byte, bo binary.ByteOrder) string { return noteBuildID(notes, bo) }
