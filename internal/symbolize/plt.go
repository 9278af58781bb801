package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// pltSymbols names x86-64 PLT stubs "func@plt". Rather than assume entry i
// of .plt belongs to relocation i (true for lazy .plt, not for .plt.got),
// it decodes each stub's "jmp *GOT(%rip)" and names it after the symbol whose
// GOT slot that is. This covers .plt (16-byte entries after the PLT0 header,
// whose jmp targets GOT[2] and so names nothing), .plt.sec (IBT binaries:
// endbr64 and bnd-prefixed jmp; the .plt stubs there only push and jump to
// PLT0) and .plt.got.
func pltSymbols(f *elf.File) []candidate {
	if f.Machine != elf.EM_X86_64 || f.Class != elf.ELFCLASS64 {
		return nil
	}
	dyn, err := f.DynamicSymbols()
	if err != nil {
		return nil
	}
	slots := map[uint64]string{}
	for _, name := range []string{".rela.plt", ".rela.dyn"} {
		sec := f.Section(name)
		if sec == nil || sec.Type != elf.SHT_RELA {
			continue
		}
		data, err := sec.Data()
		if err != nil {
			continue
		}
		for ; len(data) >= 24; data = data[24:] {
			off, info := f.ByteOrder.Uint64(data), f.ByteOrder.Uint64(data[8:])
			typ, sym := elf.R_X86_64(info&0xffffffff), info>>32
			if typ == elf.R_X86_64_IRELATIVE {
				// A slot an ifunc resolver fills (libc's own memcpy,
				// strlen ...): no symbol, so named by the resolver's
				// address as perf names it, "*ABS*+0xADDEND@plt".
				slots[off] = fmt.Sprintf("*ABS*+%#x", f.ByteOrder.Uint64(data[16:]))
				continue
			}
			if typ != elf.R_X86_64_JMP_SLOT && typ != elf.R_X86_64_GLOB_DAT {
				continue
			}
			// DynamicSymbols omits the null symbol at index 0.
			if sym == 0 || sym > uint64(len(dyn)) || dyn[sym-1].Name == "" {
				continue
			}
			slots[off] = dyn[sym-1].Name
		}
	}
	if len(slots) == 0 {
		return nil
	}
	var out []candidate
	for _, name := range []string{".plt", ".plt.sec", ".plt.got"} {
		sec := f.Section(name)
		if sec == nil || sec.Type != elf.SHT_PROGBITS {
			continue
		}
		data, err := sec.Data()
		if err != nil {
			continue
		}
		size := uint64(16)
		if sec.Entsize == 8 {
			size = 8
		}
		for off := uint64(0); off+size <= uint64(len(data)); off += size {
			at := sec.Addr + off
			slot, ok := stubTarget(data[off:off+size], at)
			if !ok {
				continue
			}
			if sym, ok := slots[slot]; ok {
				out = append(out, candidate{name: sym + "@plt", start: at, size: size, bind: elf.STB_GLOBAL})
			}
		}
	}
	return out
}

// stubTarget finds "ff 25 disp32" (jmp *disp(%rip)) at the start of a stub,
// optionally after endbr64 (f3 0f 1e fa) and a bnd prefix (f2), and returns
// the GOT address it jumps through.
func stubTarget(stub []byte, addr uint64) (uint64, bool) {
	i := 0
	if len(stub) >= 4 && stub[0] == 0xf3 && stub[1] == 0x0f && stub[2] == 0x1e && stub[3] == 0xfa {
		i = 4
	}
	if i < len(stub) && stub[i] == 0xf2 {
		i++
	}
	if i+6 > len(stub) || stub[i] != 0xff || stub[i+1] != 0x25 {
		return 0, false
	}
	disp := int32(binary.LittleEndian.Uint32(stub[i+2:]))
	return addr + uint64(i) + 6 + uint64(int64(disp)), true
}
