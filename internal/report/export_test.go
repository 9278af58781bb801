package report_test

import (
	"bytes"
	"path/filepath"
	"testing"

	pprof "github.com/google/pprof/profile"

	"github.com/jitprof/jitprof/internal/golden"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/profile/profiletest"
	"github.com/jitprof/jitprof/internal/report"
)

func TestFoldedGolden(t *testing.T) {
	for name, v := range map[string]report.FoldedValue{"sample.folded": report.FoldedSamples, "sample.periods.folded": report.FoldedPeriods} {
		var buf bytes.Buffer
		if err := report.WriteFolded(&buf, profiletest.Sample(), 0, v); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", name), buf.Bytes())
	}
}

// TestPprofGolden writes the pprof export, reads it back with the pprof
// library and compares its text form.
func TestPprofGolden(t *testing.T) {
	pp, err := report.Pprof(profiletest.Sample(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := pp.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := pprof.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "sample.pprof.txt"), []byte(back.String()))
}

// TestPprofMainMapping: the first mapping, which pprof takes for the
// program, is the executable, not the image first sampled (the dynamic
// linker) nor the one most sampled (a library).
func TestPprofMainMapping(t *testing.T) {
	b := profile.NewBuilder()
	ev := b.Event(profile.Event{Name: "cpu-clock", Period: 1})
	ld := b.Image(profile.Image{Name: "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"})
	libc := b.Image(profile.Image{Name: "/usr/lib/x86_64-linux-gnu/libc.so.6"})
	tool := b.Image(profile.Image{Name: "/usr/bin/helper"})
	app := b.Image(profile.Image{Name: "/usr/local/bin/app"})
	fr := func(im int32, name string) int32 {
		return b.Frame(profile.Frame{Func: b.Func(profile.Func{Name: name, Image: im})})
	}
	th := b.Thread(profile.Thread{PID: 1, TID: 1, Comm: b.String("app")})
	other := b.Thread(profile.Thread{PID: 2, TID: 2, Comm: b.String("sh")})
	b.Add(profile.Key{Stack: b.Push(-1, fr(ld, "_dl_start")), Thread: th, Event: ev}, 1, 1)
	b.Add(profile.Key{Stack: b.Push(b.Push(-1, fr(app, "main")), fr(libc, "memset")), Thread: th, Event: ev}, 5, 5)
	b.Add(profile.Key{Stack: b.Push(-1, fr(libc, "memchr")), Thread: th, Event: ev}, 9, 9)
	b.Add(profile.Key{Stack: b.Push(-1, fr(tool, "run")), Thread: other, Event: ev}, 7, 7)
	pp, err := report.Pprof(b.Profile(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, m := range pp.Mapping {
		files = append(files, m.File)
	}
	if files[0] != "/usr/local/bin/app" || len(files) != 4 {
		t.Errorf("mappings %q: want the program, /usr/local/bin/app, first", files)
	}
}
