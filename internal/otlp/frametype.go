package otlp

import (
	"path/filepath"
	"strings"

	"github.com/jitprof/jitprof/internal/profile"
)

// Values of profile.frame.type. The semantic conventions' own say which
// runtime ran a frame (https://opentelemetry.io/docs/specs/semconv/registry/attributes/profile/);
// FrameJIT and FramePyPy are jitprof's, for code a JIT generated whose
// runtime has no value there: the conventions allow custom values, and
// "native" would say the code was compiled ahead of time.
const (
	FrameNative = "native"
	FrameKernel = "kernel"
	// FrameJIT is code a JIT generated for a runtime the conventions
	// have no value for: a JIT that logs its code with jitlog (such as
	// minijit), or writes perf maps or jitdumps from a runtime jitprof
	// does not recognise.
	FrameJIT = "jit"
	// FramePyPy is PyPy's JIT code: Python, but not CPython's
	// ("cpython").
	FramePyPy = "pypy"
)

// runtimes gives the frame type of the JIT code of a process by its
// executable's base name, without the version after it (python3.11 is
// python, php-fpm8.2 php-fpm).
var runtimes = map[string]string{
	"node": "v8js", "nodejs": "v8js", "deno": "v8js", "d8": "v8js", "chrome": "v8js", "chromium": "v8js",
	"java": "jvm", "javaw": "jvm",
	"beam.smp": "beam", "beam": "beam",
	"dotnet": "dotnet",
	"python": "cpython", // CPython 3.12's perf trampolines (python -X perf) write perf maps
	"pypy":   FramePyPy,
	"php":    "php", "php-fpm": "php", "php-cgi": "php",
	"ruby":   "ruby", // YJIT writes perf maps (--yjit-perf)
	"perl":   "perl",
	"luajit": "luajit",
}

// jitFrameType is the frame type of JIT code that handler named (""
// for none) in a process running exe (a path, "" when unknown) named
// comm.
func jitFrameType(handler, exe, comm string) string {
	if handler == "pypy" {
		return FramePyPy
	}
	name := comm
	if exe != "" {
		name = filepath.Base(exe)
	}
	if t, ok := runtimes[strings.TrimRight(name, "0123456789.")]; ok {
		return t
	}
	return FrameJIT
}

// frameType is the frame type of code in an image of kind k that is not
// JIT code; "" for addresses in no mapping, of which nothing is known.
func frameType(k profile.ImageKind) string {
	switch k {
	case profile.ImageKernel:
		return FrameKernel
	case profile.ImageFile:
		return FrameNative
	}
	return ""
}
