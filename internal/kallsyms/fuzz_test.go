package kallsyms

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// format writes symbols back as kallsyms lines.
func format(syms []Symbol) []byte {
	var b bytes.Buffer
	for _, s := range syms {
		fmt.Fprintf(&b, "%016x %s %s", s.Addr, []byte{s.Type}, s.Name)
		if s.Module != "" {
			fmt.Fprintf(&b, "\t[%s]", s.Module)
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// FuzzSymbols: any bytes give symbols and at most one error, after which
// nothing more is yielded; what was parsed prints and parses back the
// same; a caller may stop at any symbol.
func FuzzSymbols(f *testing.F) {
	f.Add([]byte(sample), uint8(0))
	f.Add([]byte(sample), uint8(3))
	f.Add([]byte("0000000000000000 T _text\n0000000000000000 t x\t[m]\n"), uint8(0))
	f.Add([]byte("ffffffff81000000 T x\r\n\nbad\n"), uint8(0))
	f.Add([]byte("1 a b [c] d e\n2 b\tc\t[[d]]"), uint8(1))
	f.Fuzz(func(t *testing.T, text []byte, stop uint8) {
		var syms []Symbol
		failed := false
		for s, err := range Symbols(text) {
			if failed {
				t.Fatalf("yielded %+v, %v after an error", s, err)
			}
			if err != nil {
				failed = true
				continue
			}
			if s.Name == "" || strings.ContainsAny(s.Name+s.Module, " \t\n\r\v\f") || spaces[s.Type] {
				t.Fatalf("bad symbol %+v", s)
			}
			syms = append(syms, s)
		}
		again, err := collect(string(format(syms)))
		if err != nil || fmt.Sprint(again) != fmt.Sprint(syms) {
			t.Fatalf("printed and parsed back: %v, %v; want %v", again, err, syms)
		}
		if stop > 0 {
			n := 0
			for range Symbols(text) {
				if n++; n == int(stop) {
					break
				}
			}
		}
	})
}
