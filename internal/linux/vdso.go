package linux

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// atSysinfoEHDR is the auxv entry holding the vDSO's load address.
const atSysinfoEHDR = 33

// VDSO returns the image of the vDSO the kernel mapped into this
// process. The kernel maps one vDSO image per boot and ABI into every
// process, so this copy stands for the [vdso] of any process of the same
// ABI.
func VDSO() ([]byte, error) {
	base, err := vdsoBase()
	if err != nil {
		return nil, fmt.Errorf("vdso: %w", err)
	}
	start, end, err := vdsoRange(base)
	if err != nil {
		return nil, fmt.Errorf("vdso: %w", err)
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		return nil, fmt.Errorf("vdso: %w", err)
	}
	defer mem.Close()
	buf := make([]byte, end-start)
	if _, err := mem.ReadAt(buf, int64(start)); err != nil {
		return nil, fmt.Errorf("vdso: reading /proc/self/mem: %w", err)
	}
	return buf, nil
}

func vdsoBase() (uint64, error) {
	auxv, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 0, err
	}
	for ; len(auxv) >= 16; auxv = auxv[16:] {
		if binary.NativeEndian.Uint64(auxv) == atSysinfoEHDR {
			return binary.NativeEndian.Uint64(auxv[8:]), nil
		}
	}
	return 0, errors.New("no AT_SYSINFO_EHDR in /proc/self/auxv")
}

// vdsoRange finds the extent of the mapping that starts at base.
func vdsoRange(base uint64) (start, end uint64, err error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		span, _, _ := strings.Cut(sc.Text(), " ")
		lo, hi, ok := strings.Cut(span, "-")
		if !ok {
			continue
		}
		s, err1 := strconv.ParseUint(lo, 16, 64)
		e, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && s == base && e > s {
			return s, e, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	return 0, 0, fmt.Errorf("no mapping at AT_SYSINFO_EHDR %#x in /proc/self/maps", base)
}
