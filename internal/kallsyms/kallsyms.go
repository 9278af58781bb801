package kallsyms

import (
	"fmt"
	"iter"
	"strings"
)

// Symbol is one line of kallsyms.
type Symbol struct {
	Addr   uint64
	Type   byte   // nm's letter
	Name   string // a substring of the parsed text
	Module string // without its brackets; "" in the core kernel
}

// Text reports whether the symbol is code: types t, T, w and W, the ones
// perf and symbolizers keep.
func (s Symbol) Text() bool {
	return s.Type == 'T' || s.Type == 't' || s.Type == 'W' || s.Type == 'w'
}

// Symbols yields the symbols of text, a kallsyms file, in file order,
// skipping blank lines. At a malformed line it yields an error that names
// the line by number (never its bytes) and stops. The names and modules
// are substrings of one copy of text, so a table built from them costs no
// allocation per symbol.
func Symbols(text []byte) iter.Seq2[Symbol, error] {
	return func(yield func(Symbol, error) bool) {
		rest := string(text)
		for lineNo := 1; rest != ""; lineNo++ {
			// The table is 100,000 lines and more: a loop over bytes
			// with a lookup table splits them in a third of the time
			// strings.Lines and a function per byte take.
			line := rest
			if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
				line, rest = rest[:nl+1], rest[nl+1:]
			} else {
				rest = ""
			}
			var fields [4]string
			n := 0
			for i := 0; n < len(fields); n++ {
				for i < len(line) && spaces[line[i]] {
					i++
				}
				if i == len(line) {
					break
				}
				j := i
				for j < len(line) && !spaces[line[j]] {
					j++
				}
				fields[n], i = line[i:j], j
			}
			if n == 0 {
				continue
			}
			if n < 3 || len(fields[1]) != 1 {
				yield(Symbol{}, fmt.Errorf("kallsyms line %d: want \"address type name [module]\"", lineNo))
				return
			}
			addr, ok := parseHex(fields[0])
			if !ok {
				yield(Symbol{}, fmt.Errorf("kallsyms line %d: address is not 1 to 16 hex digits", lineNo))
				return
			}
			s := Symbol{Addr: addr, Type: fields[1][0], Name: fields[2]}
			if n > 3 {
				s.Module = strings.TrimSuffix(strings.TrimPrefix(fields[3], "["), "]")
			}
			if !yield(s, nil) {
				return
			}
		}
	}
}

// spaces are the bytes that separate kallsyms fields.
var spaces = [256]bool{' ': true, '\t': true, '\n': true, '\r': true, '\v': true, '\f': true}

// parseHex parses 1 to 16 hex digits, without strconv's generality.
func parseHex(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 16 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(c)
	}
	return v, true
}
