package pypylog

import (
	"strconv"
	"strings"
)

// Location is a position in Python source, as PyPy3 writes it in loop
// names and debug_merge_point: "co_name;file:firstline-line~#index OPNAME"
// (pypy/module/pypyjit/interp_jit.py, get_printable_location).
type Location struct {
	Func      string // the code object's name
	File      string
	FirstLine int // the code object's first line
	Line      int // the line of the bytecode
	Index     int // the bytecode's offset
	Opcode    string
	// Raw is the text as logged when it is not in PyPy3's form (other
	// interpreters built with RPython, PyPy2): then only Func is set, to
	// Raw.
	Raw string
}

// String returns the location in PyPy3's form, or Raw.
func (l Location) String() string {
	if l.Raw != "" {
		return l.Raw
	}
	return l.Func + ";" + l.File + ":" + strconv.Itoa(l.FirstLine) + "-" + strconv.Itoa(l.Line) + "~#" + strconv.Itoa(l.Index) + " " + l.Opcode
}

// ParseLocation parses s; text not in PyPy3's form gives a Location with
// Raw (and Func) set to s. intern, when not nil, returns one copy of
// equal strings, since every trace repeats its functions and files.
func ParseLocation(s string, intern func(string) string) Location {
	if intern == nil {
		intern = func(s string) string { return s }
	}
	raw := func() Location { r := intern(s); return Location{Func: r, Raw: r} }
	// The file name may hold anything; the name before it is an
	// identifier and what follows it is numbers and an opcode name.
	semi := strings.IndexByte(s, ';')
	tilde := strings.LastIndex(s, "~#")
	if semi < 0 || tilde < semi {
		return raw()
	}
	head, tail := s[semi+1:tilde], s[tilde+2:]
	colon := strings.LastIndexByte(head, ':')
	if colon < 0 {
		return raw()
	}
	lines := head[colon+1:]
	dash := strings.IndexByte(lines, '-')
	sp := strings.IndexByte(tail, ' ')
	if dash < 0 || sp < 0 {
		return raw()
	}
	first, err1 := strconv.Atoi(lines[:dash])
	line, err2 := strconv.Atoi(lines[dash+1:])
	index, err3 := strconv.Atoi(tail[:sp])
	if err1 != nil || err2 != nil || err3 != nil || first < 0 || line < 0 || index < 0 {
		return raw()
	}
	return Location{
		Func:      intern(s[:semi]),
		File:      intern(head[:colon]),
		FirstLine: first,
		Line:      line,
		Index:     index,
		Opcode:    intern(tail[sp+1:]),
	}
}
