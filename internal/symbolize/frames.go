package symbolize

import (
	"debug/elf"
	"fmt"
	"io"
)

// CallFrames is an image's call frame information as its files hold it,
// for an unwinder (internal/unwind): the image's .eh_frame, and the
// .debug_frame of the image, of its separate debug file or of its
// MiniDebugInfo, each with the address the section has in the image.
type CallFrames struct {
	EHFrame, DebugFrame         []byte
	EHFrameAddr, DebugFrameAddr uint64
}

// maxFrameSection bounds a call frame section read into memory: a
// browser's .eh_frame is a few MB.
const maxFrameSection = 256 << 20

// CallFrames reads the image's call frame sections from its files,
// opened again as they were first opened. An image with none returns
// empty CallFrames.
func (im *Image) CallFrames() (cf CallFrames, err error) {
	f, err := im.reopen()
	if err != nil {
		return cf, err
	}
	defer f.Close()
	defer catch(f.name, &err)
	if cf.EHFrame, cf.EHFrameAddr, err = ehFrame(f); err != nil {
		return cf, err
	}
	files := []func() (*elfFile, error){func() (*elfFile, error) { return f, nil }}
	if im.reopenDebug != nil {
		files = append(files, im.reopenDebug)
	}
	files = append(files, func() (*elfFile, error) { return miniDebugInfo(f) })
	for i, open := range files {
		df, err := open()
		if err != nil || df == nil {
			continue
		}
		if i > 0 {
			defer df.Close()
		}
		if cf.DebugFrame, cf.DebugFrameAddr, err = section(df, ".debug_frame"); err != nil {
			return cf, err
		}
		if cf.DebugFrame != nil {
			break
		}
	}
	return cf, nil
}

// section reads section name of f, nil when f has none with contents.
func section(f *elfFile, name string) ([]byte, uint64, error) {
	s := f.Section(name)
	if s == nil || s.Type == elf.SHT_NOBITS || s.Size == 0 {
		return nil, 0, nil
	}
	if s.Size > maxFrameSection {
		return nil, 0, fmt.Errorf("%s: %s of %d bytes: %w", f.name, name, s.Size, ErrMalformed)
	}
	b, err := s.Data()
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %s: %w", f.name, name, err)
	}
	return b, s.Addr, nil
}

// ehFrame reads .eh_frame, or, in a file without section headers (as
// the kernel's vDSO may be), the .eh_frame PT_GNU_EH_FRAME's header
// points to: from there to the end of its segment.
func ehFrame(f *elfFile) ([]byte, uint64, error) {
	if b, addr, err := section(f, ".eh_frame"); b != nil || err != nil {
		return b, addr, err
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_GNU_EH_FRAME || p.Filesz < 8 || p.Filesz > maxFrameSection {
			continue
		}
		hdr := make([]byte, p.Filesz)
		if _, err := p.ReadAt(hdr, 0); err != nil {
			return nil, 0, nil
		}
		addr, ok := ehFramePtr(hdr, p.Vaddr)
		if !ok {
			return nil, 0, nil
		}
		for _, l := range f.Progs {
			if l.Type != elf.PT_LOAD || addr < l.Vaddr || addr-l.Vaddr >= l.Filesz {
				continue
			}
			n := min(l.Filesz-(addr-l.Vaddr), maxFrameSection)
			b := make([]byte, n)
			if _, err := io.ReadFull(io.NewSectionReader(l, int64(addr-l.Vaddr), int64(n)), b); err != nil {
				return nil, 0, nil
			}
			return b, addr, nil
		}
	}
	return nil, 0, nil
}

// ehFramePtr decodes the eh_frame_ptr of an .eh_frame_hdr at addr, in
// the encodings linkers write (pc-relative or absolute, 4 or 8 bytes).
func ehFramePtr(hdr []byte, addr uint64) (uint64, bool) {
	if hdr[0] != 1 {
		return 0, false
	}
	enc := hdr[1]
	var v uint64
	switch enc & 0x0f {
	case 0x03, 0x0b: // udata4, sdata4
		v = uint64(int64(int32(uint32(hdr[4]) | uint32(hdr[5])<<8 | uint32(hdr[6])<<16 | uint32(hdr[7])<<24)))
		if enc&0x0f == 0x03 {
			v &= 0xffffffff
		}
	default:
		return 0, false
	}
	switch enc & 0x70 {
	case 0x00:
	case 0x10: // pcrel
		v += addr + 4
	default:
		return 0, false
	}
	return v, true
}

// CacheKey names what the image's tables are made of (its build-id, the
// separate debug file read and the user), for a cache of tables derived
// from them kept across runs, as the function tables are; "" for an
// image without a build-id.
func (im *Image) CacheKey() string { return im.cacheKey }
