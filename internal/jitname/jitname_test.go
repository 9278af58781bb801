package jitname

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCap(t *testing.T) {
	long := strings.Repeat("a", 60<<20)
	tests := []struct {
		name, in, prefix, suffix string
	}{
		{"short", "JS:*fib /a.js:1", "JS:*fib /a.js:1", ""},
		{"exactly Max", strings.Repeat("b", Max), strings.Repeat("b", Max), ""},
		{"one over", strings.Repeat("c", Max+1), "ccc", "...[name of 4097 bytes cut]"},
		{"60 MB", long, "aaa", "...[name of 62914560 bytes cut]"},
		// A cut must not leave half a rune: é is two bytes.
		{"runes", strings.Repeat("é", Max), "éé", "...[name of 8192 bytes cut]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, got := range []string{Cap([]byte(tt.in)), CapString(tt.in)} {
				if len(got) > Max {
					t.Errorf("%d bytes, over Max", len(got))
				}
				if !strings.HasPrefix(got, tt.prefix) || !strings.HasSuffix(got, tt.suffix) {
					t.Errorf("got %.40q...%q", got, got[max(0, len(got)-40):])
				}
				if tt.suffix == "" && got != tt.in {
					t.Errorf("changed a name that fits")
				}
				if !utf8.ValidString(got) {
					t.Errorf("cut splits a rune")
				}
			}
		})
	}
}
