package symbolize

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// Demangle returns the readable form of a C++ (_Z...) or Rust (legacy
// _ZN...17h<hash>E, or v0 _R...) symbol name, and any other name unchanged.
// Like perf, it drops the hash that legacy Rust names end with: it differs
// between builds of the same code and would split one function's samples.
func Demangle(name string) string {
	if !strings.HasPrefix(name, "_Z") && !strings.HasPrefix(name, "_R") {
		return name
	}
	s, err := demangle.ToString(name)
	if err != nil {
		return name
	}
	if isRustLegacy(name) {
		s = stripRustHash(s)
	}
	return s
}

func isRustLegacy(name string) bool {
	if i := strings.LastIndex(name, "E."); i > 0 {
		name = name[:i+1]
	}
	return strings.HasPrefix(name, "_ZN") && len(name) > 23 && strings.HasSuffix(name, "E") &&
		name[len(name)-20:len(name)-17] == "17h"
}

// stripRustHash removes a trailing "::h" followed by 16 hex digits.
func stripRustHash(s string) string {
	i := strings.LastIndex(s, "::h")
	if i < 0 || len(s)-i != 3+16 {
		return s
	}
	for _, c := range s[i+3:] {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return s
		}
	}
	return s[:i]
}
