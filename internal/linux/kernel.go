package linux

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"github.com/jitprof/jitprof/internal/kallsyms"
	"golang.org/x/sys/unix"
)

// Kernel is where the running kernel's text and modules are, for the
// kernel MMAP records perf synthesizes.
type Kernel struct {
	// Text is the address of _text, the symbol perf relocates the
	// kernel map against (its pgoff); Stext and Etext bound the code.
	Text, Stext, Etext uint64
	// Hidden is set when /proc/kallsyms shows zero addresses, as it
	// does for readers without CAP_SYSLOG unless
	// /proc/sys/kernel/kptr_restrict is 0 and perf_event_paranoid is at
	// most 1; kernel samples cannot be symbolized then.
	Hidden  bool
	Modules []Module
}

// Module is a loaded kernel module.
type Module struct {
	Name  string
	Start uint64 // 0 when hidden by kptr_restrict
	Size  uint64
}

// KernelMapping reads the kernel's text bounds from /proc/kallsyms and its
// modules from /proc/modules (absent on kernels built without modules).
func KernelMapping() (Kernel, error) {
	syms, err := Kallsyms()
	if err != nil {
		return Kernel{}, fmt.Errorf("kernel mapping: %w", err)
	}
	k, err := kernelText(syms)
	if err != nil {
		return Kernel{}, fmt.Errorf("kernel mapping: /proc/kallsyms: %w", err)
	}
	if k.Modules, err = Modules(); err != nil {
		return Kernel{}, fmt.Errorf("kernel mapping: %w", err)
	}
	return k, nil
}

// Modules lists the loaded kernel modules from /proc/modules (none on
// kernels built without modules).
func Modules() ([]Module, error) {
	b, err := os.ReadFile("/proc/modules")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	mods, err := parseModules(b)
	if err != nil {
		return nil, fmt.Errorf("/proc/modules: %w", err)
	}
	return mods, nil
}

// BootID is the kernel's random identity of this boot.
func BootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", errors.New("/proc/sys/kernel/random/boot_id: empty")
	}
	return id, nil
}

// BPFProgIDs lists the ids of the loaded BPF programs, in order. Listing
// them needs CAP_SYS_ADMIN; others get an error.
func BPFProgIDs() ([]uint32, error) {
	var ids []uint32
	// union bpf_attr for BPF_PROG_GET_NEXT_ID: start_id, next_id, open_flags.
	var attr [3]uint32
	for {
		_, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_GET_NEXT_ID, uintptr(unsafe.Pointer(&attr[0])), unsafe.Sizeof(attr))
		if errno == unix.ENOENT {
			return ids, nil
		}
		if errno != 0 {
			return nil, fmt.Errorf("listing BPF programs: %w", errno)
		}
		ids = append(ids, attr[1])
		attr[0] = attr[1]
	}
}

// kernelText finds the kernel's text bounds in a kallsyms file.
func kernelText(syms []byte) (Kernel, error) {
	var k Kernel
	found := 0
	for s, err := range kallsyms.Symbols(syms) {
		if err != nil {
			return k, err
		}
		if s.Module != "" {
			continue
		}
		switch s.Name {
		case "_text":
			k.Text = s.Addr
		case "_stext":
			k.Stext = s.Addr
		case "_etext":
			k.Etext = s.Addr
		default:
			continue
		}
		if found++; found == 3 {
			break
		}
	}
	if found == 0 {
		return k, errors.New("no _text, _stext or _etext")
	}
	k.Hidden = k.Text == 0 && k.Stext == 0
	return k, nil
}

// parseModules parses /proc/modules: "name size refs deps state address".
func parseModules(b []byte) ([]Module, error) {
	var mods []Module
	n := 0
	for line := range strings.Lines(string(b)) {
		n++
		f := strings.Fields(line)
		if len(f) < 6 {
			return nil, fmt.Errorf("line %d: too few fields", n)
		}
		size, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: bad size", n)
		}
		start, err := strconv.ParseUint(strings.TrimPrefix(f[5], "0x"), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: bad address", n)
		}
		mods = append(mods, Module{Name: f[0], Start: start, Size: size})
	}
	return mods, nil
}

// KallsymsPath is where the running kernel lists its symbols.
const KallsymsPath = "/proc/kallsyms"

// Kallsyms returns the running kernel's symbol table, as text in the
// kallsyms format (package kallsyms parses it). Readers without
// CAP_SYSLOG see zero addresses unless kernel.kptr_restrict is 0.
func Kallsyms() ([]byte, error) { return os.ReadFile(KallsymsPath) }

// KernelNotes returns the running kernel's ELF notes (its build-id among
// them), from /sys/kernel/notes.
func KernelNotes() ([]byte, error) { return os.ReadFile("/sys/kernel/notes") }
