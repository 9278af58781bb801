package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The call frame information of an image: .eh_frame (LSB, "Exception
// Frames") or .debug_frame (DWARF 5, section 6.4), a list of CIEs (what
// the functions of a compiler unit share) and FDEs (a range of code and
// the program that says, address by address, where its caller's
// registers are). Both are read the same way here; they differ in the
// CIE id, in how an FDE names its CIE and in how addresses are encoded.

// errCFI is wrapped by every error about malformed call frame data.
var errCFI = errors.New("malformed call frame information")

// Section is a section of call frame information and the address it
// has in the image (the address pc-relative pointers count from).
type Section struct {
	Data []byte
	Addr uint64
}

// cie is a common information entry.
type cie struct {
	codeAlign uint64
	dataAlign int64
	raReg     uint64
	fdeEnc    byte // DW_EH_PE_* of the FDEs' addresses (.eh_frame)
	hasAug    bool // 'z': the FDEs carry augmentation data
	signal    bool // 'S': the FDEs are signal trampolines
	addrSize  int  // .debug_frame version 4
	// initial is where its initial instructions are in the section.
	initial span
}

// span is a part of a section: [start, end).
type span struct{ start, end int }

// fde is a frame description entry: the code [start, end) and its CFA
// program, which runs after its CIE's initial instructions.
type fde struct {
	cie        *cie
	start, end uint64
	program    span // in the section
}

// DW_EH_PE_* pointer encodings (LSB 10.5.1).
const (
	peAbsptr  = 0x00
	peUleb128 = 0x01
	peUdata2  = 0x02
	peUdata4  = 0x03
	peUdata8  = 0x04
	peSleb128 = 0x09
	peSdata2  = 0x0a
	peSdata4  = 0x0b
	peSdata8  = 0x0c
	pePcrel   = 0x10
	peTextrel = 0x20
	peDatarel = 0x30
	peFuncrel = 0x40
	peAligned = 0x50
	peIndirec = 0x80
	peOmit    = 0xff
)

// reader reads a section of little-endian call frame data, recording the
// first error instead of panicking on short input.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at offset %d", errCFI, what, r.off)
	}
	r.off = len(r.b)
}

func (r *reader) left() int { return max(len(r.b)-r.off, 0) }

func (r *reader) bytes(n int) []byte {
	if n < 0 || r.left() < n {
		r.fail("short data")
		return nil
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	return b
}

func (r *reader) u8() byte {
	if b := r.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if b := r.bytes(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.bytes(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.bytes(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *reader) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if r.left() == 0 {
			r.fail("short LEB128")
			return 0
		}
		c := r.b[r.off]
		r.off++
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		if c&0x80 == 0 {
			return v
		}
	}
}

func (r *reader) sleb() int64 {
	var v int64
	shift := uint(0)
	for {
		if r.left() == 0 {
			r.fail("short LEB128")
			return 0
		}
		c := r.b[r.off]
		r.off++
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

func (r *reader) cstring() string {
	for i := r.off; i < len(r.b); i++ {
		if r.b[i] == 0 {
			s := string(r.b[r.off:i])
			r.off = i + 1
			return s
		}
	}
	r.fail("unterminated string")
	return ""
}

// pointer reads a pointer encoded as enc, at section address base+off
// for pc-relative ones; datarel is the base of DW_EH_PE_datarel (the
// .eh_frame_hdr's address, where that is what it counts from).
func (r *reader) pointer(enc byte, base, datarel uint64) (uint64, bool) {
	if enc == peOmit {
		return 0, false
	}
	at := base + uint64(r.off)
	var v uint64
	switch enc & 0x0f {
	case peAbsptr, peUdata8, peSdata8:
		v = r.u64()
	case peUleb128:
		v = r.uleb()
	case peUdata2:
		v = uint64(r.u16())
	case peSdata2:
		v = uint64(int64(int16(r.u16())))
	case peUdata4:
		v = uint64(r.u32())
	case peSdata4:
		v = uint64(int64(int32(r.u32())))
	case peSleb128:
		v = uint64(r.sleb())
	default:
		r.fail("unknown pointer encoding")
		return 0, false
	}
	switch enc & 0x70 {
	case peAbsptr:
	case pePcrel:
		v += at
	case peDatarel:
		v += datarel
	default:
		// textrel and funcrel have no base on x86-64; aligned is for
		// absolute pointers in a table this reader has none of.
		r.fail("unsupported pointer application")
		return 0, false
	}
	if enc&peIndirec != 0 {
		// An address to read the pointer from in the running
		// process: not for a table built from the file.
		r.fail("indirect pointer")
		return 0, false
	}
	return v, r.err == nil
}

// maxEntries bounds the CIEs and FDEs read from one section: more than a
// few hundred thousand is not a compiler's output.
const maxEntries = 1 << 22

// parseFrames reads every FDE of sec, with its CIE; eh says .eh_frame
// (else .debug_frame). A malformed FDE is skipped; a malformed entry
// length ends the section, and the error says where.
func parseFrames(sec Section, eh bool) ([]fde, error) {
	r := &reader{b: sec.Data}
	cies := map[int]*cie{}
	var out []fde
	var firstErr error
	for n := 0; r.left() > 0 && n < maxEntries; n++ {
		start := r.off
		length := uint64(r.u32())
		if r.err != nil {
			return out, r.err
		}
		if length == 0 {
			if eh {
				break // the terminator of .eh_frame
			}
			continue
		}
		dwarf64 := false
		if length == 0xffffffff {
			length = r.u64()
			dwarf64 = true
		}
		idSize := uint64(4)
		if dwarf64 {
			idSize = 8
		}
		if r.err != nil || length > uint64(r.left()) || length < idSize {
			return out, fmt.Errorf("%w: entry at offset %d runs past the section", errCFI, start)
		}
		end := r.off + int(length)
		var id uint64
		idAt := r.off
		if dwarf64 {
			id = r.u64()
		} else {
			id = uint64(r.u32())
		}
		isCIE := eh && id == 0 || !eh && (id == 0xffffffff || dwarf64 && id == ^uint64(0))
		entry := &reader{b: sec.Data[:end], off: r.off}
		r.off = end
		if isCIE {
			c, err := parseCIE(entry, eh)
			if err != nil {
				firstErr = cmpErr(firstErr, err)
				continue
			}
			cies[start] = c
			continue
		}
		cieAt := int(id) // .debug_frame: the CIE's offset in the section
		if eh {
			cieAt = idAt - int(id) // .eh_frame: back from the id's own place
		}
		c := cies[cieAt]
		if c == nil {
			// A CIE after its FDE, or elsewhere in the section: read
			// it where it is.
			cr := &reader{b: sec.Data}
			var err error
			if c, err = readCIEAt(cr, cieAt, eh); err != nil {
				firstErr = cmpErr(firstErr, err)
				continue
			}
			cies[cieAt] = c
		}
		f, err := parseFDE(entry, c, sec.Addr, eh)
		if err != nil {
			firstErr = cmpErr(firstErr, err)
			continue
		}
		if f.end > f.start {
			out = append(out, f)
		}
	}
	return out, firstErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// readCIEAt reads the CIE at offset at of the section r reads.
func readCIEAt(r *reader, at int, eh bool) (*cie, error) {
	if at < 0 || at >= len(r.b) {
		return nil, fmt.Errorf("%w: FDE names a CIE at offset %d, outside the section", errCFI, at)
	}
	r.off = at
	length := uint64(r.u32())
	dwarf64 := length == 0xffffffff
	if dwarf64 {
		length = r.u64()
	}
	if r.err != nil || length < 4 || length > uint64(r.left()) {
		return nil, fmt.Errorf("%w: no CIE at offset %d", errCFI, at)
	}
	end := r.off + int(length)
	var id uint64
	if dwarf64 {
		id = r.u64()
	} else {
		id = uint64(r.u32())
	}
	if !(eh && id == 0 || !eh && (id == 0xffffffff || dwarf64 && id == ^uint64(0))) {
		return nil, fmt.Errorf("%w: no CIE at offset %d", errCFI, at)
	}
	return parseCIE(&reader{b: r.b[:end], off: r.off}, eh)
}

// parseCIE reads a CIE's fields after its id.
func parseCIE(r *reader, eh bool) (*cie, error) {
	c := &cie{fdeEnc: peAbsptr, addrSize: 8}
	version := r.u8()
	if version != 1 && version != 3 && version != 4 {
		return nil, fmt.Errorf("%w: CIE version %d", errCFI, version)
	}
	aug := r.cstring()
	if version == 4 {
		c.addrSize = int(r.u8())
		r.u8() // segment selector size
		if c.addrSize != 4 && c.addrSize != 8 {
			return nil, fmt.Errorf("%w: CIE address size %d", errCFI, c.addrSize)
		}
	}
	if aug == "eh" {
		r.bytes(8) // a GCC 2 exception table pointer
		aug = ""
	}
	c.codeAlign = r.uleb()
	c.dataAlign = r.sleb()
	if version == 1 {
		c.raReg = uint64(r.u8())
	} else {
		c.raReg = r.uleb()
	}
	if len(aug) > 0 && aug[0] == 'z' {
		c.hasAug = true
		n := r.uleb()
		if n > uint64(r.left()) {
			return nil, fmt.Errorf("%w: CIE augmentation data past its end", errCFI)
		}
		data := &reader{b: r.b[:r.off+int(n)], off: r.off}
		r.off += int(n)
		for _, a := range aug[1:] {
			switch a {
			case 'R':
				c.fdeEnc = data.u8()
			case 'P':
				// The personality routine: read past it.
				enc := data.u8()
				if _, ok := data.pointer(enc&^peIndirec, 0, 0); !ok && enc != peOmit {
					return nil, fmt.Errorf("%w: CIE personality", errCFI)
				}
			case 'L':
				data.u8()
			case 'S':
				c.signal = true
			case 'B', 'G':
				// AArch64's pointer authentication keys and
				// memory tagging: nothing to read.
			default:
				// An augmentation this reader does not know: the
				// length lets it skip the data, and the rest stands.
			}
		}
		if data.err != nil {
			return nil, fmt.Errorf("%w: CIE augmentation data", errCFI)
		}
	} else if aug != "" {
		return nil, fmt.Errorf("%w: CIE augmentation %q", errCFI, aug)
	}
	if r.err != nil {
		return nil, r.err
	}
	if c.codeAlign == 0 || c.codeAlign > 1<<16 {
		return nil, fmt.Errorf("%w: CIE code alignment %d", errCFI, c.codeAlign)
	}
	c.initial = span{r.off, len(r.b)}
	return c, nil
}

// parseFDE reads an FDE's fields after its CIE pointer.
func parseFDE(r *reader, c *cie, secAddr uint64, eh bool) (fde, error) {
	f := fde{cie: c}
	if eh {
		var ok bool
		f.start, ok = r.pointer(c.fdeEnc, secAddr, 0)
		if !ok {
			return f, fmt.Errorf("%w: FDE address", errCFI)
		}
		// The range is a plain number in the pointer's format.
		n, ok := r.pointer(c.fdeEnc&0x0f, 0, 0)
		if !ok {
			return f, fmt.Errorf("%w: FDE range", errCFI)
		}
		f.end = f.start + n
	} else {
		if c.addrSize == 4 {
			f.start = uint64(r.u32())
			f.end = f.start + uint64(r.u32())
		} else {
			f.start = r.u64()
			f.end = f.start + r.u64()
		}
	}
	if f.end < f.start {
		return f, fmt.Errorf("%w: FDE range wraps", errCFI)
	}
	if c.hasAug {
		n := r.uleb()
		r.bytes(int(min(n, 1<<31)))
	}
	if r.err != nil {
		return f, r.err
	}
	f.program = span{r.off, len(r.b)}
	return f, nil
}
