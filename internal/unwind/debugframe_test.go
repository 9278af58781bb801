package unwind

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/jitprof/jitprof/internal/symbolize"
)

// debugFrameSource is built without .eh_frame for its own functions
// (-fno-asynchronous-unwind-tables): their call frame information is in
// .debug_frame only.
const debugFrameSource = `__attribute__((noinline)) long f(long x) { char b[64]; for (int i = 0; i < 64; i++) b[i] = x + i; return b[x & 63]; }
int main(int argc, char **argv) { return (int)f(argc); }
`

// TestDebugFrameSources builds a program whose functions have only
// .debug_frame, and finds their rules where each kind of image keeps
// them: in the binary, in a separate debug file its .gnu_debuglink names
// (as internal/symbolize finds it), and in MiniDebugInfo.
func TestDebugFrameSources(t *testing.T) {
	tools := map[string]string{}
	for _, tool := range []string{"gcc", "objcopy", "xz"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required in CI (scripts/setup.sh): %v", tool, err)
			}
			t.Skipf("no %s: %v", tool, err)
		}
		tools[tool] = p
	}
	dir := t.TempDir()
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(tools[name], args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	src, bin := filepath.Join(dir, "df.c"), filepath.Join(dir, "df")
	if err := os.WriteFile(src, []byte(debugFrameSource), 0o644); err != nil {
		t.Fatal(err)
	}
	run("gcc", "-O2", "-g", "-fomit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-o", bin, src)
	funcs := funcAddrs(t, bin, "f", "main")

	// The debug file beside a stripped binary that names it.
	debug, linked := filepath.Join(dir, "df.debug"), filepath.Join(dir, "linked")
	run("objcopy", "--only-keep-debug", bin, debug)
	run("objcopy", "--strip-debug", "--add-gnu-debuglink="+debug, bin, linked)
	// MiniDebugInfo: the debug sections, xz-compressed, in .gnu_debugdata
	// of a binary stripped of them without a debuglink.
	mini, stripped := filepath.Join(dir, "mini"), filepath.Join(dir, "mini-df")
	run("objcopy", "--only-keep-debug", bin, mini)
	run("xz", "-k", mini)
	run("objcopy", "--strip-debug", "--add-section", ".gnu_debugdata="+mini+".xz", bin, stripped)

	for _, path := range []string{bin, linked, stripped} {
		im, err := symbolize.Load(path, symbolize.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cf, err := im.CallFrames()
		if err != nil {
			t.Fatal(err)
		}
		tb, err := Build(Section{cf.EHFrame, cf.EHFrameAddr}, Section{cf.DebugFrame, cf.DebugFrameAddr})
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(path), err)
		}
		for name, addr := range funcs {
			if rs := tb.lookup(addr); rs == nil || rs.cfa.kind != cfaReg || rs.regs[regRA].kind != ruleOffset {
				t.Errorf("%s: %s at %#x: rules %+v, want its .debug_frame's", filepath.Base(path), name, addr, rs)
			}
		}
	}
}

// funcAddrs returns the addresses of the named functions of an ELF file.
func funcAddrs(t *testing.T, path string, names ...string) map[string]uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, s := range syms {
		for _, n := range names {
			if s.Name == n && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
				out[n] = s.Value
			}
		}
	}
	if len(out) != len(names) {
		t.Fatalf("%s: found %v of %v", path, out, names)
	}
	return out
}
