package annotate

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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
	dir := t.TempDir()
	obj, bin := filepath.Join(dir, "loop.o"), filepath.Join(dir, "loop")
	for _, c := range [][]string{{need(t, "as"), "--gdwarf-5", "-o", obj, "testdata/loop.s"}, {need(t, "ld"), "-o", bin, obj}} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
	}
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
	if err := Write(&bytes.Buffer{}, p, Options{Symbol: "main"}); !errors.Is(err, ErrNoSamples) {
		t.Errorf("unsampled symbol: %v, want ErrNoSamples", err)
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
