package profile

import (
	"bytes"
	"github.com/jitprof/jitprof/internal/golden"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"
)

// sample builds a small profile by hand: two threads, a recursive stack,
// a kernel frame and an anonymous (JIT) bucket.
func sample() *Profile {
	b := NewBuilder()
	ev := b.Event(Event{Name: "cpu-clock", Freq: 4000})
	app := b.Image(Image{Name: "/usr/bin/app", BuildID: "abcd", Start: 0x400000, Limit: 0x500000})
	kern := b.Image(Image{Name: "[kernel.kallsyms]", Kind: ImageKernel})
	anon := b.Image(Image{Name: "anon (tgid:7 range:0x7f0000-0x7f1000)", Kind: ImageAnon, Start: 0x7f0000, Limit: 0x7f1000})
	fr := func(im int32, name string, addr uint64, line int32) int32 {
		f := b.Func(Func{Name: name, Image: im, Addr: addr, File: "app.c", Kernel: im == kern})
		return b.Frame(Frame{Func: f, File: b.String("app.c"), Line: line})
	}
	main, work, rec, sys, jit := fr(app, "main", 0x1000, 10), fr(app, "work", 0x1100, 20), fr(app, "rec", 0x1200, 30), fr(kern, "do_syscall_64", 0xffffffff81000000, 0), fr(anon, "anon (tgid:7 range:0x7f0000-0x7f1000)", 0x7f0000, 0)
	push := func(frames ...int32) int32 {
		n := int32(-1)
		for _, f := range frames {
			n = b.Push(n, f)
		}
		return n
	}
	t1 := b.Thread(Thread{PID: 7, TID: 7, Comm: b.String("app")})
	t2 := b.Thread(Thread{PID: 7, TID: 8, Comm: b.String("worker")})
	b.Add(Key{Stack: push(main, work), Thread: t1, CPU: 0, Event: ev}, 5, 1250000)
	b.Add(Key{Stack: push(main, rec, rec, rec), Thread: t1, CPU: 1, Event: ev}, 3, 750000)
	b.Add(Key{Stack: push(main, work, sys), Thread: t2, CPU: 1, Event: ev}, 1, 250000)
	b.Add(Key{Stack: push(main, jit), Thread: t2, CPU: 0, Event: ev}, 2, 500000)
	m := b.Meta()
	m.Cmdline = []string{"perf", "record", "-g", "./app"}
	m.StartNS, m.EndNS, m.Lost = 1_000_000_000, 1_003_000_000, 2
	return b.Profile()
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}

func TestFoldedGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := sample().WriteFolded(&buf, 0); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "sample.folded", buf.Bytes())
}

// TestPprofGolden writes the pprof export, reads it back with the pprof
// library and compares its text form.
func TestPprofGolden(t *testing.T) {
	pp, err := sample().Pprof(0)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := pp.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "sample.pprof.txt", []byte(back.String()))
}
