package symbolize

import (
	"strings"
	"sync"
	"sync/atomic"

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

// demangled keeps the demangled forms of a table's mangled names, by
// name id, in an array made when the first mangled name is asked for:
// most tables' names (C's, the kernel's) are not mangled and need none,
// and an array for each of the kernel's 200,000 names is 1.6 MB made and
// cleared by every report.
type demangled struct {
	once  sync.Once
	names []atomic.Pointer[string]
}

// name returns raw, the name of id among n, demangled.
func (d *demangled) name(id uint32, n int, raw string) string {
	if !strings.HasPrefix(raw, "_Z") && !strings.HasPrefix(raw, "_R") {
		return raw // Demangle's answer, without caching it
	}
	d.once.Do(func() { d.names = make([]atomic.Pointer[string], n) })
	if p := d.names[id].Load(); p != nil {
		return *p
	}
	s := Demangle(raw)
	d.names[id].Store(&s)
	return s
}
