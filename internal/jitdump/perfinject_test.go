package jitdump

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"github.com/jitprof/jitprof/internal/perftest"
)

// helperEnv makes the test binary act as a tiny JIT (see TestMain).
const helperEnv = "JITDUMP_TEST_JIT_DIR"

var helperNames = []string{"jitprof_test_fn_a", "jitprof_test_fn_b"}

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		if err := actAsJIT(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func monotonicNow() uint64 {
	var ts syscall.Timespec
	const clockMonotonic = 1
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		panic(e)
	}
	return uint64(ts.Sec)*1e9 + uint64(ts.Nsec)
}

// actAsJIT does what a JIT does for perf: writes jit-PID.dump with our
// Writer and maps it executable, which is the marker perf record sees.
func actAsJIT(dir string) error {
	mach := map[string]uint32{"amd64": 62, "arm64": 183}[runtime.GOARCH]
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("jit-%d.dump", os.Getpid())))
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := NewWriter(f, Header{ElfMach: mach, PID: uint32(os.Getpid()), Timestamp: monotonicNow()})
	if err != nil {
		return err
	}
	if _, err := syscall.Mmap(int(f.Fd()), 0, os.Getpagesize(), syscall.PROT_READ|syscall.PROT_EXEC, syscall.MAP_PRIVATE); err != nil {
		return fmt.Errorf("mmap marker: %w", err)
	}
	code := []byte{0x90, 0x90, 0x90, 0xc3}
	for i, name := range helperNames {
		addr := uint64(0x7f0000100000 + i*0x1000)
		err := w.Write(&CodeLoad{
			RecordHeader: RecordHeader{Type: TypeCodeLoad, Timestamp: monotonicNow()},
			PID:          uint32(os.Getpid()), TID: uint32(syscall.Gettid()),
			VMA: addr, CodeAddr: addr, CodeSize: uint64(len(code)), CodeIndex: uint64(i), Name: name, Code: code,
		})
		if err != nil {
			return err
		}
	}
	return w.Write(&CodeClose{RecordHeader: RecordHeader{Type: TypeCodeClose, Timestamp: monotonicNow()}})
}

// TestPerfInjectAcceptsWriter records the helper JIT with perf and checks
// that `perf inject --jit` turns every CODE_LOAD our Writer wrote into an
// ELF image holding the function's symbol.
func TestPerfInjectAcceptsWriter(t *testing.T) {
	perf := perftest.Need(t, "perf")
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("no ELF machine number here for %s", runtime.GOARCH)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "perf.data")
	rec := exec.Command(perf, "record", "-q", "-k", "mono", "-e", "cpu-clock", "-o", data, "--", os.Args[0], "-test.run=^$")
	rec.Env = append(os.Environ(), helperEnv+"="+dir)
	if out, err := rec.CombinedOutput(); err != nil {
		if os.Getenv("CI") != "true" && os.Geteuid() != 0 {
			t.Skipf("perf record not permitted for this user (lower perf_event_paranoid or run as root): %v\n%s", err, out)
		}
		t.Fatalf("perf record: %v\n%s", err, out)
	}
	inj := exec.Command(perf, "inject", "--jit", "-i", data, "-o", filepath.Join(dir, "injected.data"))
	if out, err := inj.CombinedOutput(); err != nil {
		t.Fatalf("perf inject --jit: %v\n%s", err, out)
	}
	sos, err := filepath.Glob(filepath.Join(dir, "jitted-*-*.so"))
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, so := range sos {
		f, err := elf.Open(so)
		if err != nil {
			t.Fatalf("%s: %v", so, err)
		}
		syms, err := f.Symbols()
		f.Close()
		if err != nil {
			t.Fatalf("%s: symbols: %v", so, err)
		}
		for _, s := range syms {
			found[s.Name] = true
		}
	}
	for _, name := range helperNames {
		if !found[name] {
			t.Errorf("perf inject made no image with symbol %s (images: %v)", name, sos)
		}
	}
}
