package report

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/jitprof/jitprof/internal/golden"
	"github.com/jitprof/jitprof/internal/profile"
)

// arcsProfile is a flat profile with arcs, as a session read with -g
// gives: main calls a and b; a calls spin 75 times, b 25 times; spin
// has 100 samples of its own, a 10, b 5, main none; one arc ends in
// anonymous memory.
func arcsProfile() *profile.Profile {
	b := profile.NewBuilder()
	ev := b.Event(profile.Event{Name: "cpu-clock", Period: 1000})
	prog := b.Image(profile.Image{Name: "/usr/bin/prog"})
	jit := b.Image(profile.Image{Name: "anon (tgid:7 range:0x1000-0x2000)", Kind: profile.ImageAnon})
	th := b.Thread(profile.Thread{PID: 7, TID: 7, Comm: b.String("prog")})
	frame := func(im int32, name string) int32 {
		return b.Frame(profile.Frame{Func: b.Func(profile.Func{Image: im, Name: name})})
	}
	main, a, bb, spin := frame(prog, "main"), frame(prog, "a"), frame(prog, "b"), frame(prog, "spin")
	code := frame(jit, "anon (tgid:7 range:0x1000-0x2000)")
	for _, s := range []struct {
		fr int32
		n  uint64
	}{{spin, 100}, {a, 10}, {bb, 5}, {code, 2}} {
		b.Add(profile.Key{Stack: b.Push(-1, s.fr), Thread: th, CPU: -1, Event: ev}, s.n, s.n*1000)
	}
	p := b.Meta()
	for _, arc := range []struct {
		from, to int32
		n        uint64
	}{{main, a, 85}, {main, bb, 30}, {a, spin, 75}, {bb, spin, 25}, {code, spin, 4}} {
		p.Arcs = append(p.Arcs, profile.Arc{Caller: arc.from, Callee: arc.to, Event: ev, Value: profile.Value{Count: arc.n, Period: arc.n * 1000}})
	}
	return b.Profile()
}

// TestArcsGolden: the text and JSON call graphs of arcs, opreport -c's
// blocks: callers above the function, [self] and callees below.
func TestArcsGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"arcs.text", Options{Chains: Chains{Graph: true}}},
		{"arcs.json", Options{Chains: Chains{Graph: true}, Format: JSON}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, arcsProfile(), c.opts); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", c.name), buf.Bytes())
		})
	}
	if err := Write(&bytes.Buffer{}, arcsProfile(), Options{Chains: Chains{Graph: true}, Format: CSV}); err != ErrArcsFormat {
		t.Errorf("csv: %v, want ErrArcsFormat", err)
	}
}

// TestArcsExcludeAnon: leaving JIT samples out leaves out the arcs with
// an end in JIT code, and spin's callers are a and b alone, 75/25.
func TestArcsExcludeAnon(t *testing.T) {
	p := arcsProfile()
	ExcludeAnon(p)
	var buf bytes.Buffer
	if err := Write(&buf, p, Options{Chains: Chains{Graph: true}, Format: JSON}); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Events []struct {
			Functions []struct {
				Symbol  string
				Callers []struct {
					Symbol  string
					Samples uint64
					Percent float64
				}
			}
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	fns := out.Events[0].Functions
	if len(fns) != 4 || fns[0].Symbol != "spin" {
		t.Fatalf("functions %+v, want spin first of 4", fns)
	}
	callers := fns[0].Callers
	if len(callers) != 2 || callers[0].Symbol != "a" || callers[0].Samples != 75 || callers[0].Percent != 75 ||
		callers[1].Symbol != "b" || callers[1].Percent != 25 {
		t.Errorf("spin's callers %+v, want a 75%%, b 25%%", callers)
	}
}
