package symbolize

import (
	"cmp"
	"debug/dwarf"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Frame is one source-level frame at an address.
type Frame struct {
	Func string // demangled unless raw names were asked for
	File string // as recorded in DWARF; "" when unknown
	Line int    // 0 when unknown
}

// lineRow maps addresses from addr up to the next row to file:line; line 0
// with file 0 marks the end of a sequence (no code).
type lineRow struct {
	addr uint64
	file uint32
	line uint32
}

// inlined is one DW_TAG_inlined_subroutine address range.
type inlined struct {
	lo, hi   uint64
	depth    int // 1 for a call inlined directly into the subprogram
	name     uint32
	callFile uint32
	callLine uint32
}

// subprogram is one address range of a concrete function, with the inlined
// calls inside it.
type subprogram struct {
	lo, hi  uint64
	name    uint32
	inlines *[]inlined
}

// dwarfIndex answers address → frames with two binary searches.
type dwarfIndex struct {
	strs  []string
	rows  []lineRow
	funcs []subprogram
}

// Frames returns the source frames at the ELF virtual address addr,
// innermost first: the first frame is the function whose code is at addr
// (possibly inlined) with addr's file:line; each following frame is the
// function that inlined the previous one, at the call site's file:line; the
// last is the out-of-line function. For return addresses from a callchain
// pass addr-1, so the call, not the next statement, is named. The DWARF
// index is built on the first call.
func (im *Image) Frames(addr uint64) ([]Frame, error) {
	im.dwOnce.Do(func() {
		if im.openDWARF == nil {
			im.dwErr = fmt.Errorf("%s: %w", im.path, ErrNoDebugInfo)
			return
		}
		d, infoSize, err := im.openDWARF()
		if err != nil {
			im.dwErr = err
			return
		}
		im.dw, im.dwErr = indexDWARF(im.path, d, infoSize)
	})
	if im.dwErr != nil {
		return nil, im.dwErr
	}
	return im.dw.frames(addr, im.syms), nil
}

func (x *dwarfIndex) frames(addr uint64, syms symtab) []Frame {
	file, line := x.line(addr)
	var chain []inlined
	outer := ""
	i, found := slices.BinarySearchFunc(x.funcs, addr, func(s subprogram, a uint64) int { return cmp.Compare(s.lo, a) })
	if !found {
		i--
	}
	if i >= 0 && addr < x.funcs[i].hi {
		fn := x.funcs[i]
		outer = x.strs[fn.name]
		for _, in := range *fn.inlines {
			if in.lo <= addr && addr < in.hi {
				chain = append(chain, in)
			}
		}
		slices.SortStableFunc(chain, func(a, b inlined) int { return cmp.Compare(b.depth, a.depth) })
	}
	if outer == "" {
		if s, ok := syms.lookup(addr); ok {
			outer = s.Name
		} else {
			outer = "??"
		}
	} else if !syms.rawNames() {
		outer = Demangle(outer)
	}
	name := func(id uint32) string {
		if syms.rawNames() {
			return x.strs[id]
		}
		return Demangle(x.strs[id])
	}
	frames := make([]Frame, 0, len(chain)+1)
	for _, in := range chain {
		frames = append(frames, Frame{Func: name(in.name), File: x.strs[file], Line: int(line)})
		file, line = in.callFile, in.callLine
	}
	return append(frames, Frame{Func: outer, File: x.strs[file], Line: int(line)})
}

func (x *dwarfIndex) line(addr uint64) (file, line uint32) {
	i, found := slices.BinarySearchFunc(x.rows, addr, func(r lineRow, a uint64) int { return cmp.Compare(r.addr, a) })
	if !found {
		i--
	}
	if i < 0 {
		return 0, 0
	}
	return x.rows[i].file, x.rows[i].line
}

// indexDWARF reads every compilation unit's line table and subprogram tree.
// Every DIE takes at least a byte of .debug_info, so infoSize bounds the
// number of entries: debug/dwarf's reader can return null entries forever
// on some corrupt units, and this turns that into an error.
func indexDWARF(path string, d *dwarf.Data, infoSize uint64) (x *dwarfIndex, err error) {
	defer catch(path, &err)
	b := &dwarfBuilder{d: d, x: &dwarfIndex{strs: []string{""}}, ids: map[string]uint32{"": 0}, names: map[dwarf.Offset]uint32{}, budget: infoSize + 1}
	r := d.Reader()
	for {
		cu, err := b.next(r)
		if err != nil {
			return nil, fmt.Errorf("%s: dwarf: %w", path, err)
		}
		if cu == nil {
			break
		}
		if cu.Tag != dwarf.TagCompileUnit && cu.Tag != dwarf.TagPartialUnit {
			r.SkipChildren()
			continue
		}
		files, err := b.lines(cu)
		if err != nil {
			return nil, fmt.Errorf("%s: dwarf line table: %w", path, err)
		}
		if err := b.tree(r, cu, files); err != nil {
			return nil, fmt.Errorf("%s: dwarf: %w", path, err)
		}
	}
	x = b.x
	// Sequences may overlap at their edges: an end marker and the first row
	// of the next sequence at one address. The row that starts code wins,
	// and of several rows at one address the last one is in effect.
	slices.SortStableFunc(x.rows, func(a, b lineRow) int {
		if c := cmp.Compare(a.addr, b.addr); c != 0 {
			return c
		}
		return cmp.Compare(min(a.line, 1), min(b.line, 1))
	})
	rows := x.rows[:0]
	for _, r := range x.rows {
		if n := len(rows); n > 0 && rows[n-1].addr == r.addr {
			rows[n-1] = r
			continue
		}
		rows = append(rows, r)
	}
	x.rows = slices.Clip(rows)
	slices.SortFunc(x.funcs, func(a, b subprogram) int { return cmp.Compare(a.lo, b.lo) })
	return x, nil
}

type dwarfBuilder struct {
	d     *dwarf.Data
	x     *dwarfIndex
	ids   map[string]uint32
	names map[dwarf.Offset]uint32
	// budget is how many more entries a well-formed .debug_info can hold.
	budget uint64
}

var errDWARFLoop = errors.New("more entries than .debug_info can hold")

func (b *dwarfBuilder) next(r *dwarf.Reader) (*dwarf.Entry, error) {
	if b.budget == 0 {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, errDWARFLoop)
	}
	b.budget--
	return r.Next()
}

func (b *dwarfBuilder) intern(s string) uint32 {
	if id, ok := b.ids[s]; ok {
		return id
	}
	id := uint32(len(b.x.strs))
	b.x.strs = append(b.x.strs, s)
	b.ids[s] = id
	return id
}

// lines appends cu's line rows and returns its file table, interned.
func (b *dwarfBuilder) lines(cu *dwarf.Entry) ([]uint32, error) {
	lr, err := b.d.LineReader(cu)
	if err != nil || lr == nil {
		return nil, err
	}
	var files []uint32
	for _, f := range lr.Files() {
		var id uint32
		if f != nil {
			id = b.intern(f.Name)
		}
		files = append(files, id)
	}
	var e dwarf.LineEntry
	for {
		if err := lr.Next(&e); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		if e.EndSequence {
			b.x.rows = append(b.x.rows, lineRow{addr: e.Address})
			continue
		}
		var file uint32
		if e.File != nil {
			file = b.intern(e.File.Name)
		}
		b.x.rows = append(b.x.rows, lineRow{addr: e.Address, file: file, line: uint32(max(e.Line, 0))})
	}
	return files, nil
}

// tree walks cu's DIEs, recording concrete subprograms and the inlined
// subroutines nested in them.
func (b *dwarfBuilder) tree(r *dwarf.Reader, cu *dwarf.Entry, files []uint32) error {
	if !cu.Children {
		return nil
	}
	type open struct {
		inlines *[]inlined // of the enclosing concrete subprogram, or nil
		depth   int
	}
	stack := []open{{}}
	for len(stack) > 0 {
		e, err := b.next(r)
		if err != nil {
			return err
		}
		if e == nil {
			return nil
		}
		if e.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		top := stack[len(stack)-1]
		child := top
		switch e.Tag {
		case dwarf.TagSubprogram:
			ranges, err := b.d.Ranges(e)
			if err != nil || len(ranges) == 0 {
				break
			}
			list := new([]inlined)
			name := b.funcName(e)
			for _, rg := range ranges {
				if rg[0] < rg[1] {
					b.x.funcs = append(b.x.funcs, subprogram{lo: rg[0], hi: rg[1], name: name, inlines: list})
				}
			}
			child = open{inlines: list}
		case dwarf.TagInlinedSubroutine:
			if top.inlines == nil {
				break
			}
			ranges, err := b.d.Ranges(e)
			if err != nil {
				break
			}
			child.depth = top.depth + 1
			in := inlined{depth: child.depth, name: b.funcName(e)}
			if f, ok := e.Val(dwarf.AttrCallFile).(int64); ok && f >= 0 && f < int64(len(files)) {
				in.callFile = files[f]
			}
			if l, ok := e.Val(dwarf.AttrCallLine).(int64); ok && l > 0 && l <= 1<<31 {
				in.callLine = uint32(l)
			}
			for _, rg := range ranges {
				in.lo, in.hi = rg[0], rg[1]
				*top.inlines = append(*top.inlines, in)
			}
		}
		if e.Children {
			stack = append(stack, child)
		}
	}
	return nil
}

// funcName prefers the linkage (mangled) name, as addr2line does, and
// follows abstract_origin and specification to the declaring DIE.
func (b *dwarfBuilder) funcName(e *dwarf.Entry) uint32 { return b.nameOf(e, 8) }

// attrMIPSLinkageName is the pre-DWARF 4 linkage name GCC still emits for -gdwarf-2/3.
const attrMIPSLinkageName dwarf.Attr = 0x2007

// nameOf bounds the hops so a crafted reference cycle terminates.
func (b *dwarfBuilder) nameOf(e *dwarf.Entry, hops int) uint32 {
	for _, a := range []dwarf.Attr{dwarf.AttrLinkageName, attrMIPSLinkageName, dwarf.AttrName} {
		if s, ok := e.Val(a).(string); ok && s != "" {
			return b.intern(s)
		}
	}
	off, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
	if !ok {
		off, ok = e.Val(dwarf.AttrSpecification).(dwarf.Offset)
	}
	if !ok || hops == 0 {
		return 0
	}
	if id, ok := b.names[off]; ok {
		return id
	}
	r := b.d.Reader()
	r.Seek(off)
	next, err := r.Next()
	if err != nil || next == nil {
		return 0
	}
	id := b.nameOf(next, hops-1)
	b.names[off] = id
	return id
}
