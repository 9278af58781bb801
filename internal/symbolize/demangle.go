package symbolize

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// Demangle returns the readable form of a C++ (_Z...) or Rust (legacy
// _ZN...17h<hash>E, or v0 _R...) symbol name, and any other name unchanged.
// Like perf, it drops the hash legacy Rust names end with (the demangler
// does so unless asked to be verbose): it differs between builds of the same
// code and would split one function's samples across builds. Also like
// perf (without -v), it leaves out parameter lists: reports then match
// perf's symbol for symbol, and a row stays readable.
func Demangle(name string) string {
	if !strings.HasPrefix(name, "_Z") && !strings.HasPrefix(name, "_R") {
		return name
	}
	return demangle.Filter(name, demangle.NoParams)
}
