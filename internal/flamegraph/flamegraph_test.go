package flamegraph_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/flamegraph"
	"github.com/jitprof/jitprof/internal/golden"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/internal/profile/profiletest"
)

// jitProfile is a small profile of a JIT: two generations of fib at one
// address under its interpreter, code no handler named, the kernel, and
// a second command.
func jitProfile() *profile.Profile {
	b := profile.NewBuilder()
	ev := b.Event(profile.Event{Name: "cpu-clock", Freq: 4000})
	exe := b.Image(profile.Image{Name: "/usr/bin/minijit"})
	jit := b.Image(profile.Image{Name: "[JIT jitlog] minijit", Kind: profile.ImageAnon})
	bucket := "anon (tgid:7 range:0x7f0000-0x7f1000)"
	anon := b.Image(profile.Image{Name: bucket, Kind: profile.ImageAnon})
	kern := b.Image(profile.Image{Name: "[kernel.kallsyms]", Kind: profile.ImageKernel})
	fr := func(f profile.Func) int32 { return b.Frame(profile.Frame{Func: b.Func(f)}) }
	main := fr(profile.Func{Name: "main", Image: exe, Addr: 0x1000})
	run := fr(profile.Func{Name: "run", Image: exe, Addr: 0x1100})
	gen3 := fr(profile.Func{Name: "fib [gen 3]", Image: jit, Addr: 0x7f0000, Gen: 3, Size: 64})
	gen5 := fr(profile.Func{Name: "fib [gen 5]", Image: jit, Addr: 0x7f0000, Gen: 5, Size: 64})
	unnamed := fr(profile.Func{Name: bucket, Image: anon, Addr: 0x7f0000})
	sys := fr(profile.Func{Name: "do_syscall_64", Image: kern, Kernel: true})
	// A name that would end the page's script if it were not escaped.
	odd := fr(profile.Func{Name: "</script><b>odd", Image: exe, Addr: 0x1200})
	push := func(frames ...int32) int32 {
		n := int32(-1)
		for _, f := range frames {
			n = b.Push(n, f)
		}
		return n
	}
	t1 := b.Thread(profile.Thread{PID: 7, TID: 7, Comm: b.String("minijit")})
	t2 := b.Thread(profile.Thread{PID: 9, TID: 9, Comm: b.String("sh")})
	b.Add(profile.Key{Stack: push(main, run, gen3), Thread: t1, Event: ev}, 40, 40)
	b.Add(profile.Key{Stack: push(main, run, gen5), Thread: t1, Event: ev}, 30, 30)
	b.Add(profile.Key{Stack: push(main, run, gen5, gen5), Thread: t1, Event: ev}, 10, 10)
	b.Add(profile.Key{Stack: push(main, unnamed), Thread: t1, Event: ev}, 5, 5)
	b.Add(profile.Key{Stack: push(main, sys), Thread: t1, Event: ev}, 4, 4)
	b.Add(profile.Key{Stack: push(odd), Thread: t2, Event: ev}, 1, 1)
	return b.Profile()
}

func write(t *testing.T, p *profile.Profile, opts flamegraph.Options) string {
	t.Helper()
	var buf bytes.Buffer
	if err := flamegraph.Write(&buf, p, opts); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestGolden(t *testing.T) {
	for name, p := range map[string]*profile.Profile{"minijit.html": jitProfile(), "sample.html": profiletest.Sample()} {
		out := write(t, p, flamegraph.Options{Title: "perf.data", Notes: []string{"a note"}})
		golden.Check(t, filepath.Join("testdata", name), []byte(out))
	}
}

// flameData is the graph's data as the page's script reads it.
type flameData struct {
	Frames [][]any `json:"frames"`
	Root   []any   `json:"root"`
}

func data(t *testing.T, page string) flameData {
	t.Helper()
	m := regexp.MustCompile(`const flameData = (.*);\n`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no flameData in the page")
	}
	var d flameData
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestStacks: the tree holds every sample once, under its command, each
// frame's value its samples and the sum of its children's at most.
func TestStacks(t *testing.T) {
	page := write(t, jitProfile(), flamegraph.Options{})
	d := data(t, page)
	paths := map[string]float64{}
	var walk func(n []any, path string) float64
	walk = func(n []any, path string) float64 {
		value := n[1].(float64)
		if f := int(n[0].(float64)); f >= 0 {
			path += ";" + d.Frames[f][0].(string)
		}
		var sum float64
		for _, c := range n[2].([]any) {
			sum += walk(c.([]any), path)
		}
		if sum > value {
			t.Errorf("%s: children have %v samples, more than its %v", path, sum, value)
		}
		paths[path] = value
		return value
	}
	if total := walk(d.Root, ""); total != 90 {
		t.Errorf("root has %v samples, want 90", total)
	}
	for path, want := range map[string]float64{
		";minijit;main;run;fib [gen 3]":             40,
		";minijit;main;run;fib [gen 5]":             40,
		";minijit;main;run;fib [gen 5];fib [gen 5]": 10,
		";sh;</script><b>odd":                       1,
	} {
		if paths[path] != want {
			t.Errorf("%s: %v samples, want %v", path, paths[path], want)
		}
	}
	// JIT frames say what named them and their generation.
	for _, f := range d.Frames {
		if f[0] == "fib [gen 5]" && (f[1].(float64) != 1 || f[2] != "JIT code: [JIT jitlog] minijit, generation 5") {
			t.Errorf("frame %v: want JIT code of jitlog, generation 5", f)
		}
	}
	if strings.Contains(page, "</script><b>") {
		t.Error("a function's name ends the page's script")
	}
	// The table lists functions by their own samples, JIT ones marked.
	if !regexp.MustCompile(`(?s)<tr class="k1"><td class="n">40</td><td class="n">44\.44%</td><td class="n">40</td><td class="name">fib \[gen 3\]</td>`).MatchString(page) {
		t.Error("the table has no row for fib [gen 3] with its 40 samples as JIT code")
	}
}

func TestNoEvent(t *testing.T) {
	if err := flamegraph.Write(&bytes.Buffer{}, jitProfile(), flamegraph.Options{Event: 1}); err == nil {
		t.Error("Write of a missing event did not fail")
	}
}
