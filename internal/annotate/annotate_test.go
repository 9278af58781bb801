package annotate

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/golden"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/symbolize"
)

// need returns the path of a tool, skipping the test without it, or
// failing on CI where it is installed.
func need(t *testing.T, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required on CI: %v", tool, err)
		}
		t.Skipf("%s is not installed: %v", tool, err)
	}
	return p
}

// loop assembles testdata/loop.s and returns a profile of samples in
// its loop: 3 on add, 5 on dec, 2 on jne, and one event without any.
func loop(t *testing.T) *profile.Profile {
	t.Helper()
	return loopProfile(t, loopBinary(t, t.TempDir(), "testdata/loop.s"))
}

// loopBinary assembles and links src into dir/loop.
func loopBinary(t *testing.T, dir, src string) string {
	t.Helper()
	obj, bin := filepath.Join(dir, "loop.o"), filepath.Join(dir, "loop")
	for _, c := range [][]string{{need(t, "as"), "--gdwarf-5", "-o", obj, src}, {need(t, "ld"), "-o", bin, obj}} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
	}
	return bin
}

// loopProfile is loop's profile of the binary bin.
func loopProfile(t *testing.T, bin string) *profile.Profile {
	t.Helper()
	b := profile.NewBuilder()
	ev := b.Event(profile.Event{Name: "cpu-clock", Freq: 4000})
	im := b.Image(profile.Image{Name: bin})
	start := b.Func(profile.Func{Name: "_start", Image: im, Addr: 0x401000})
	th := b.Thread(profile.Thread{PID: 1, TID: 1, Comm: b.String("loop")})
	for addr, n := range map[uint64]uint64{0x401007: 3, 0x401009: 5, 0x40100b: 2} {
		node := b.Push(-1, b.Frame(profile.Frame{Func: start, Addr: addr}))
		b.Add(profile.Key{Stack: node, Thread: th, CPU: -1, Event: ev}, n, n*250000)
	}
	return b.Profile()
}

func TestGolden(t *testing.T) {
	p := loop(t)
	cases := []struct {
		name string
		opts Options
	}{
		{"loop.att.source.text", Options{Symbol: "_start", Source: true}},
		{"loop.intel.text", Options{Symbol: "_start", Syntax: Intel}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Symbolizer = symbolize.New(symbolize.Options{DebugDirs: []string{}, BuildIDCaches: []string{}})
			var buf bytes.Buffer
			if err := Write(&buf, p, c.opts); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", c.name), buf.Bytes())
		})
	}
}

func TestErrors(t *testing.T) {
	p := loop(t)
	if err := Write(&bytes.Buffer{}, p, Options{Symbol: "main"}); !errors.Is(err, ErrNoSymbol) || !strings.Contains(err.Error(), `nearest with samples: "_start" (10 samples)`) {
		t.Errorf("no such symbol: %v, want ErrNoSymbol naming _start", err)
	}
	if err := Write(&bytes.Buffer{}, p, Options{Symbol: "idle"}); !errors.Is(err, ErrNoSamples) {
		t.Errorf("a symbol of the image without samples: %v, want ErrNoSamples", err)
	}
	if err := Write(&bytes.Buffer{}, p, Options{Symbol: "_start", DSO: "libc.so.6"}); !errors.Is(err, ErrNoSamples) {
		t.Errorf("another DSO: %v, want ErrNoSamples", err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, p, Options{Symbol: "_start", DSO: "loop"}); err != nil || buf.Len() == 0 {
		t.Errorf("DSO by base name: %v, %d bytes", err, buf.Len())
	}
	// Every function: the one here, as when named.
	var all bytes.Buffer
	if err := Write(&all, p, Options{}); err != nil || all.String() != buf.String() {
		t.Errorf("every function: %v\n%s\nwant\n%s", err, all.String(), buf.String())
	}
	if err := Write(&bytes.Buffer{}, p, Options{DSO: "libc.so.6"}); !errors.Is(err, ErrNoSamples) {
		t.Errorf("every function of an unsampled DSO: %v, want ErrNoSamples", err)
	}
}

// TestMatch: a name means the functions of that name, else the one
// sampled function it names without its copy suffix, else the one whose
// name holds it; several are listed, none gives the nearest names, and
// a function only in callchains has no samples.
func TestMatch(t *testing.T) {
	b := profile.NewBuilder()
	ev := b.Event(profile.Event{Name: "cpu-clock", Period: 1})
	jit := b.Image(profile.Image{Name: "[JIT jitlog] app", Kind: profile.ImageAnon})
	th := b.Thread(profile.Thread{PID: 1, TID: 1, Comm: b.String("app")})
	caller := b.Frame(profile.Frame{Func: b.Func(profile.Func{Name: "run_jit", Image: jit, Addr: 0x100})})
	b.Push(-1, b.Frame(profile.Frame{Func: b.Func(profile.Func{Name: "Hot", Image: jit, Addr: 0x200})}))
	for i, s := range []struct {
		name string
		n    uint64
	}{{"fib [gen 1]", 5}, {"fib [gen 5]", 7}, {"collatz [gen 3]", 4}, {"double Hot.trig(double) [0x7f00]", 2}, {"double Hot.other(int)", 1}} {
		fr := b.Frame(profile.Frame{Func: b.Func(profile.Func{Name: s.name, Image: jit, Addr: 0x1000 * uint64(i+1)})})
		b.Add(profile.Key{Stack: b.Push(b.Push(-1, caller), fr), Thread: th, Event: ev}, s.n, s.n)
	}
	p := b.Profile()
	opts := Options{Symbolizer: symbolize.New(symbolize.Options{DebugDirs: []string{}, BuildIDCaches: []string{}})}
	for _, c := range []struct {
		q    string
		want string // the function annotated, or the error's text
		err  error
	}{
		{"fib [gen 5]", "fib [gen 5]", nil},
		{"collatz", "collatz [gen 3]", nil},
		{"Hot.trig", "double Hot.trig(double) [0x7f00]", nil},
		{"double Hot.trig(double)", "double Hot.trig(double) [0x7f00]", nil},
		{"fib", `several symbols match: "fib [gen 5]" (7 samples), "fib [gen 1]" (5 samples); give one of them`, ErrAmbiguous},
		{"Hot.", `"double Hot.trig(double) [0x7f00]" (2 samples), "double Hot.other(int)" (1 sample)`, ErrAmbiguous},
		{"colatz", `no such symbol; the nearest with samples: "collatz [gen 3]" (4 samples), `, ErrNoSymbol},
		{"run_jit", "no samples", ErrNoSamples},
		{"Hot", "no samples", ErrNoSamples}, // a function of its own, not a part of Hot.trig's name
		{"Hot.trg", `no such symbol; the nearest with samples: "double Hot.trig(double) [0x7f00]" (2 samples), "double Hot.other(int)" (1 sample)`, ErrNoSymbol},
	} {
		o := opts
		o.Symbol = c.q
		var buf bytes.Buffer
		err := Write(&buf, p, o)
		if c.err != nil {
			if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q: %v, want %v with %s", c.q, err, c.err, c.want)
			}
			continue
		}
		if err != nil || !strings.HasPrefix(buf.String(), "# "+c.want+" in ") || strings.Count(buf.String(), "\n# ") > 0 {
			t.Errorf("%q: %v\n%s\nwant %s alone", c.q, err, buf.String(), c.want)
		}
	}
}

// TestSourceAsOwner: the source files an image's debug info names are
// read with the rights of the image's owner. A user's binary whose DWARF
// names a root-only file (here by .file; in C, #line 1 "/etc/shadow")
// gets the file named in root's annotate, never its lines; the same
// binary of root's gets them, so the test can tell.
func TestSourceAsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reading as the image's owner is what root's jitprof does; a user reads with their own rights")
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(dir, "secret")
	lines := "l1\nl2\nl3\nroot:SECRET-4:19000:0:99999:7:::\nl5\nl6\nroot:SECRET-7\nroot:SECRET-8\n"
	if err := os.WriteFile(secret, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("testdata/loop.s")
	if err != nil {
		t.Fatal(err)
	}
	asm := filepath.Join(dir, "loop.s")
	if err := os.WriteFile(asm, bytes.Replace(src, []byte(`"testdata/loop.c"`), []byte(`"`+secret+`"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := loopBinary(t, dir, asm)
	annotateAs := func(uid int) string {
		t.Helper()
		if err := os.Chown(bin, uid, uid); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		opts := Options{Symbol: "_start", Source: true, Symbolizer: symbolize.New(symbolize.Options{DebugDirs: []string{}, BuildIDCaches: []string{}})}
		if err := Write(&buf, loopProfile(t, bin), opts); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	if out := annotateAs(54321); strings.Contains(out, "SECRET") || !strings.Contains(out, secret+":4") {
		t.Errorf("a user's binary naming a root-only source file: want the file named and none of its lines:\n%s", out)
	}
	if out := annotateAs(0); !strings.Contains(out, "SECRET-4") {
		t.Errorf("root's binary naming root's source file: want its lines:\n%s", out)
	}
}
