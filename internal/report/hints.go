package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jitprof/jitprof/internal/profile"
)

// cpythonEval are the names of CPython's bytecode evaluation loop over
// its versions: the image that has one is CPython's interpreter.
var cpythonEval = []string{"_PyEval_EvalFrameDefault", "_PyEval_EvalFrame", "PyEval_EvalFrameEx"}

// Hints returns advice on how to see more of p than it shows. Today one:
// when CPython's interpreter, the image with its evaluation loop, has at
// least a tenth of the samples (of the first event with samples) and no
// Python function is named, how to have CPython name them.
func Hints(p *profile.Profile) []string {
	ev := slices.IndexFunc(p.Events, func(e profile.Event) bool { return e.Count > 0 })
	if ev < 0 {
		return nil
	}
	interp := int32(-1)
	for i := range p.Funcs {
		f := &p.Funcs[i]
		if strings.HasPrefix(f.Name, "py::") { // CPython's perf map names
			return nil
		}
		if slices.Contains(cpythonEval, f.Name) {
			interp = f.Image
		}
	}
	if interp < 0 {
		return nil
	}
	var self uint64
	for i := range p.Entries {
		e := &p.Entries[i]
		if int(e.Event) == ev && e.Stack >= 0 && p.FuncOf(p.Nodes[e.Stack].Frame).Image == interp {
			self += e.Period
		}
	}
	share := pct(self, p.Events[ev].Total)
	if share < 10 {
		return nil
	}
	return []string{fmt.Sprintf("%.1f%% of the samples are in CPython's interpreter (%s), which does not name the Python functions it runs. "+
		"CPython 3.12 and later name them when run with -X perf (or PYTHONPERFSUPPORT=1) and built with frame pointers: record with -g and report with -g --anon-samples",
		share, filepath.Base(p.Images[interp].Name))}
}
