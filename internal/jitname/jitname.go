package jitname

import (
	"strconv"
	"unicode/utf8"
)

// Max is the most bytes a name keeps, marker included.
const Max = 4096

// marker ends a cut name: "...[name of 62914560 bytes cut]".
func marker(n int) string { return "...[name of " + strconv.Itoa(n) + " bytes cut]" }

// Cap returns b as a string of at most Max bytes, converting only what it
// keeps.
func Cap(b []byte) string {
	if len(b) <= Max {
		return string(b)
	}
	m := marker(len(b))
	return string(b[:cut(b, Max-len(m))]) + m
}

// CapString is Cap for a name already in a string.
func CapString(s string) string {
	if len(s) <= Max {
		return s
	}
	m := marker(len(s))
	return s[:cut([]byte(s[:Max]), Max-len(m))] + m
}

// cut returns n, or less so as not to split a UTF-8 sequence.
func cut(b []byte, n int) int {
	for i := n; i > n-utf8.UTFMax && i > 0; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return n
}
