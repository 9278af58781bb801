package report

import (
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perfdatasrc"
	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/internal/profile"
	"github.com/jitprof/jitprof/perfdata"
)

// evalProfile has leaf functions with the given self samples, in order.
func evalProfile(names []string, counts []uint64) *profile.Profile {
	b := profile.NewBuilder()
	ev := b.Event(profile.Event{Name: "cpu-clock", Period: 1})
	im := b.Image(profile.Image{Name: "/usr/bin/python3.11"})
	th := b.Thread(profile.Thread{PID: 1, TID: 1, Comm: b.String("python3")})
	kern := b.Image(profile.Image{Name: "[kernel.kallsyms]", Kind: profile.ImageKernel})
	for i, n := range names {
		f := profile.Func{Name: n, Image: im, Addr: uint64(i)}
		if k, ok := strings.CutPrefix(n, "[k] "); ok {
			f.Name, f.Image, f.Kernel = k, kern, true
		}
		fr := b.Frame(profile.Frame{Func: b.Func(f)})
		b.Add(profile.Key{Stack: b.Push(-1, fr), Thread: th, Event: ev}, counts[i], counts[i])
	}
	return b.Profile()
}

func TestCPythonHint(t *testing.T) {
	for _, c := range []struct {
		names  []string
		counts []uint64
		hint   bool
	}{
		{[]string{"_PyEval_EvalFrameDefault", "PyObject_Malloc"}, []uint64{3, 7}, true},
		{[]string{"unicodekeys_lookup_unicode", "_PyEval_EvalFrameDefault", "[k] other"}, []uint64{9, 2, 89}, true},
		{[]string{"_PyEval_EvalFrameDefault", "[k] other"}, []uint64{9, 91}, false},      // under a tenth
		{[]string{"_PyEval_EvalFrameDefault", "py::f:/app.py"}, []uint64{50, 50}, false}, // Python functions named
		{[]string{"main", "work"}, []uint64{50, 50}, false},
	} {
		h := Hints(evalProfile(c.names, c.counts))
		if got := len(h) == 1 && strings.Contains(h[0], "-X perf"); got != c.hint || len(h) > 1 {
			t.Errorf("%v %v: hints %q, want a CPython hint: %v", c.names, c.counts, h, c.hint)
		}
	}
}

// TestCPythonHintReal records CPython running a loop: the report of it
// shows the evaluation loop on top, and its header says how to see the
// Python functions.
func TestCPythonHintReal(t *testing.T) {
	perftest.Perf(t)
	// The interpreter itself: python3 may be a launcher script (pyenv's).
	py := strings.TrimSpace(perftest.Run(t, perftest.Need(t, "python3"), "-c", "import sys; print(sys.executable)"))
	data := perftest.Record(t, "py.data", "-F", "2000", "--", py, "-c", "def f(n):\n s = 0\n for i in range(n): s += i % 7\n return s\nf(3000000)\n")
	f, err := perfdata.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := perfdatasrc.Load(f, perfdatasrc.Options{LeafOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := Write(&buf, p, Options{Sort: []string{KeySym}}); err != nil {
		t.Fatal(err)
	}
	header, _, _ := strings.Cut(buf.String(), "\n#\n")
	if !strings.Contains(header, "of the samples are in CPython's interpreter") || !strings.Contains(header, "-X perf") {
		t.Errorf("no CPython hint in the report:\n%.2000s", buf.String())
	}
}
