package web

import (
	"fmt"
	"regexp"
	"sync"

	"github.com/google/pprof/driver"
	pprof "github.com/google/pprof/profile"

	"github.com/jitprof/jitprof/internal/annotate"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/symbolize"
	"github.com/jitprof/jitprof/internal/trust"
)

// pprof knows code by its address in one address space, where mappings
// do not overlap, and finds an instruction's samples by address alone.
// jitprof's frames hold addresses of other spaces: ELF frames their
// virtual address in their file (every shared library's start at 0), JIT
// frames their address in their process, where a JIT re-generates code
// at addresses other code had. So in the profile pprof gets, every ELF
// image and every piece of JIT code whose bytes its JIT logged is
// relocated to a range of its own, and its object file (ObjAddr) maps
// the addresses back: pprof's disassembly then gives each instruction its
// own samples, not those of whatever else was at its address.
const (
	// fileStride is the room of one ELF image's virtual addresses; image
	// k is at (k+1)*fileStride.
	fileStride = 1 << 40
	// jitBase is where relocated JIT code starts, above every relocated
	// image and below the kernel's addresses, which stay as they are.
	jitBase = 1 << 60
	// jitStride is the room of one piece of JIT code, more than any has
	// (codemap.MaxCodeSize).
	jitStride = 1 << 32
)

// code is one relocated object: an ELF image or a piece of JIT code.
type code struct {
	image        int32
	jit          *profile.Func // the JIT code; nil for an ELF image
	start, limit uint64        // its relocated range
	obj          uint64        // the object address at start: JIT code's real address, 0 for an image
}

func (c *code) objAddr(addr uint64) (uint64, error) {
	if addr < c.start || addr >= c.limit {
		return 0, fmt.Errorf("%#x is outside [%#x, %#x)", addr, c.start, c.limit)
	}
	return addr - c.start + c.obj, nil
}

// relocate relocates the ELF images and the JIT code with logged bytes
// of pp, the pprof export of p: an image keeps its mapping, moved; a
// piece of JIT code gets a mapping of its own, named "IMAGE: NAME @ADDR".
// It returns the relocated objects by their mapping's file. Addresses of
// 0 (a profile loaded without them) stay 0.
func relocate(p *profile.Profile, pp *pprof.Profile) map[string]*code {
	files := map[string]*code{}
	images := map[int32]*code{}
	jit := map[int32]*pprof.Mapping{}
	nextFile, nextJIT := uint64(fileStride), uint64(jitBase)
	for _, loc := range pp.Location {
		fn := p.Frames[loc.ID-1].Func
		f := &p.Funcs[fn]
		im := &p.Images[f.Image]
		var c *code
		switch {
		case im.Kind == profile.ImageFile && loc.Mapping != nil && nextFile < jitBase:
			if c = images[f.Image]; c == nil {
				c = &code{image: f.Image, start: nextFile, limit: nextFile + fileStride}
				nextFile += fileStride
				images[f.Image] = c
				loc.Mapping.Start, loc.Mapping.Limit, loc.Mapping.Offset = c.start, c.limit, 0
				files[loc.Mapping.File] = c
			}
		case isJIT(im) && len(f.Code) > 0:
			m := jit[fn]
			if m == nil {
				c = &code{image: f.Image, jit: f, start: nextJIT, limit: nextJIT + uint64(len(f.Code)), obj: f.Addr}
				nextJIT += jitStride
				m = &pprof.Mapping{ID: uint64(len(pp.Mapping) + 1), Start: c.start, Limit: c.limit, Offset: c.obj,
					File: fmt.Sprintf("%s: %s @%#x", im.Name, f.Name, f.Addr), HasFunctions: true}
				pp.Mapping = append(pp.Mapping, m)
				jit[fn] = m
				files[m.File] = c
			}
			loc.Mapping = m
			c = files[m.File]
		default:
			continue
		}
		if loc.Address >= c.obj && loc.Address != 0 {
			loc.Address = c.start + loc.Address - c.obj
		}
	}
	return files
}

// objTool is pprof's ObjTool over the objects relocate made: JIT code
// disassembled from the bytes its JIT logged, ELF images read through
// the symbolizer. Other images of the profile (the kernel, JIT code
// without bytes) open with nothing in them.
type objTool struct {
	p      *profile.Profile
	sym    *symbolize.Symbolizer
	files  map[string]*code
	images map[string]bool   // every image's name
	funcs  map[int32][]int32 // ELF image -> its functions, indices in p.Funcs
	syntax map[bool]annotate.Syntax
	src    *sources

	credMu sync.Mutex
	creds  map[int32]trust.Cred // image -> whose rights the sources it names are read with
}

func newObjTool(p *profile.Profile, files map[string]*code, sym *symbolize.Symbolizer, src *sources) *objTool {
	t := &objTool{p: p, sym: sym, files: files, images: map[string]bool{}, funcs: map[int32][]int32{},
		syntax: map[bool]annotate.Syntax{false: annotate.ATT, true: annotate.Intel}, src: src, creds: map[int32]trust.Cred{}}
	for _, im := range p.Images {
		t.images[im.Name] = true
	}
	for i, f := range p.Funcs {
		if !f.Unresolved && p.Images[f.Image].Kind == profile.ImageFile {
			t.funcs[f.Image] = append(t.funcs[f.Image], int32(i))
		}
	}
	return t
}

func (t *objTool) Open(file string, _, _, _ uint64, _ string) (driver.ObjFile, error) {
	if c, ok := t.files[file]; ok {
		return &objFile{t: t, file: file, c: c}, nil
	}
	if t.images[file] {
		return &objFile{t: t, file: file}, nil
	}
	// pprof also tries files of its own (under $HOME/pprof); only the
	// recording's images are jitprof's to show.
	return nil, fmt.Errorf("%s: not an image of the recording", file)
}

// elf opens an ELF image through the symbolizer.
func (t *objTool) elf(image int32) (*symbolize.Image, error) {
	im := &t.p.Images[image]
	return t.sym.Open(im.Name, im.BuildID)
}

// source returns the name pprof is to know file by, a source file that
// image's data names: its copy in the snapshot, read with the rights of
// the image's owner (symbolize.Image.SourceCred). The source files JIT
// data names, and those of an image that cannot be opened, are read with
// nobody's rights: the view does not know the process's user.
func (t *objTool) source(file string, image int32) string {
	if file == "" {
		return ""
	}
	t.credMu.Lock()
	as, ok := t.creds[image]
	if !ok {
		as = trust.Nobody
		if t.p.Images[image].Kind == profile.ImageFile {
			if elf, err := t.elf(image); err == nil {
				as = elf.SourceCred()
			}
		}
		t.creds[image] = as
	}
	t.credMu.Unlock()
	return t.src.path(file, as)
}

// Disasm disassembles [start, end] (end is the last byte, as in pprof's
// Sym) of a relocated object, in its object addresses.
func (t *objTool) Disasm(file string, start, end uint64, intel bool) ([]driver.Inst, error) {
	c, ok := t.files[file]
	if !ok {
		return nil, fmt.Errorf("%s: no code to disassemble", file)
	}
	syntax := t.syntax[intel]
	if c.jit != nil {
		return t.instsIn(annotate.Disassemble(c.jit.Code, c.jit.Addr, syntax, annotate.JITSymbols(c.jit)), start, end, c.image, nil), nil
	}
	elf, err := t.elf(c.image)
	if err != nil {
		return nil, err
	}
	// pprof asks for ranges around its samples, which may begin and end
	// mid-function: every function overlapping the range is decoded.
	var insts []annotate.Inst
	for a := start; a <= end && a >= start; {
		sym, ok := elf.LookupAddr(a)
		if !ok || sym.Size == 0 || sym.Start+sym.Size <= a {
			a++
			continue
		}
		if code, err := annotate.ReadCode(elf, sym.Start, sym.Size); err == nil {
			insts = append(insts, annotate.Disassemble(code, sym.Start, syntax, annotate.ImageSymbols(elf))...)
		}
		a = sym.Start + sym.Size
	}
	return t.instsIn(insts, start, end, c.image, elf), nil
}

// instsIn converts the instructions in [start, end] for pprof, with
// their source lines when elf, the image's, has them.
func (t *objTool) instsIn(insts []annotate.Inst, start, end uint64, image int32, elf *symbolize.Image) []driver.Inst {
	var out []driver.Inst
	for _, in := range insts {
		if in.PC < start || in.PC > end {
			continue
		}
		di := driver.Inst{Addr: in.PC, Text: in.Text}
		if elf != nil {
			if frames, err := elf.Frames(in.PC); err == nil && len(frames) > 0 {
				di.Function, di.File, di.Line = frames[0].Func, t.source(frames[0].File, image), frames[0].Line
			}
		}
		out = append(out, di)
	}
	return out
}

// objFile is a relocated object, or an image with nothing to show (c
// nil).
type objFile struct {
	t    *objTool
	file string
	c    *code
}

func (o *objFile) Name() string { return o.file }
func (o *objFile) Close() error { return nil }

func (o *objFile) BuildID() string {
	if o.c == nil {
		return ""
	}
	return o.t.p.Images[o.c.image].BuildID
}

func (o *objFile) ObjAddr(addr uint64) (uint64, error) {
	if o.c == nil {
		return 0, fmt.Errorf("%s: no code", o.file)
	}
	return o.c.objAddr(addr)
}

// SourceLine gives the source lines of a relocated address.
func (o *objFile) SourceLine(addr uint64) ([]driver.Frame, error) {
	if o.c == nil || o.c.jit != nil {
		return nil, nil // JIT code's lines are in the profile's frames already
	}
	addr, err := o.c.objAddr(addr)
	if err != nil {
		return nil, err
	}
	elf, err := o.t.elf(o.c.image)
	if err != nil {
		return nil, err
	}
	frames, err := elf.Frames(addr)
	if err != nil {
		return nil, err
	}
	out := make([]driver.Frame, len(frames))
	for i, f := range frames {
		out[i] = driver.Frame{Func: f.Func, File: o.t.source(f.File, o.c.image), Line: f.Line}
	}
	return out, nil
}

// Symbols lists the object's functions in the profile that match r and
// hold addr (a relocated address), when they are given: pprof only
// disassembles functions with samples, and these are the ones.
func (o *objFile) Symbols(r *regexp.Regexp, addr uint64) ([]*driver.Sym, error) {
	if o.c == nil {
		return nil, nil
	}
	if addr != 0 {
		var err error
		if addr, err = o.c.objAddr(addr); err != nil {
			return nil, nil
		}
	}
	in := func(name string, start, size uint64) []*driver.Sym {
		if size == 0 || r != nil && !r.MatchString(name) || addr != 0 && (addr < start || addr-start >= size) {
			return nil
		}
		return []*driver.Sym{{Name: []string{name}, File: o.file, Start: start, End: start + size - 1}}
	}
	if f := o.c.jit; f != nil {
		return in(f.Name, f.Addr, uint64(len(f.Code))), nil
	}
	elf, err := o.t.elf(o.c.image)
	if err != nil {
		return nil, err
	}
	var out []*driver.Sym
	for _, fi := range o.t.funcs[o.c.image] {
		f := &o.t.p.Funcs[fi]
		if s, ok := elf.LookupAddr(f.Addr); ok && s.Start == f.Addr {
			out = append(out, in(f.Name, s.Start, s.Size)...)
		}
	}
	return out, nil
}
