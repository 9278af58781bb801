package jitlog

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
)

// seedDB is a small real database: every record kind, one torn record.
func seedDB(f *testing.F) []byte {
	l, err := Open(Options{Dir: f.TempDir(), Name: "seed"})
	if err != nil {
		f.Fatal(err)
	}
	seq, _ := l.CodeLoad(0x1000, 4, "load", &Load{Code: []byte{1, 2, 3, 4}, Files: []string{"f"}, Lines: []LineEntry{{1, 0, 2}}, Bytecode: []BytecodeEntry{{1, 9}}})
	l.CodeMove(seq, 0x1000, 0x2000)
	l.reserve(32)
	l.Enter(7, seq)
	l.Exit(7)
	l.CodeUnload(seq)
	end := *l.appendp
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(l.Path())
	if err != nil {
		f.Fatal(err)
	}
	return b[:end+closeSize]
}

func FuzzReader(f *testing.F) {
	db := seedDB(f)
	f.Add(db)
	f.Add(db[:HeaderSize])
	f.Add(db[:len(db)-5])
	unknown := append(bytes.Clone(db[:HeaderSize]), 16, 0, 0, 0, 99, 0, 0x4c, 0x4a, 1, 2, 3, 4, 5, 6, 7, 8)
	f.Add(unknown)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		n := 0
		for r.Next() {
			n++
			if n > len(b)/frameSize+1 {
				t.Fatalf("%d records from %d bytes", n, len(b))
			}
			if l, ok := r.Record().(*LoadRecord); ok {
				for _, e := range l.Lines {
					if int(e.File) >= len(l.Files) {
						t.Fatalf("line entry names file %d of %d", e.File, len(l.Files))
					}
				}
			}
		}
		if err := r.Err(); err != nil && !errors.Is(err, ErrFormat) && !errors.Is(err, ErrTorn) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("error of no known kind: %v", err)
		}
		// Wanting the code's records: those alone, never more than
		// every record.
		w, err := NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("the header read once and not twice: %v", err)
		}
		w.Want(CodeKinds...)
		m := 0
		for w.Next() {
			switch w.Record().Kind() {
			case KindHeader, KindCodeLoad, KindCodeUnwind, KindCodeMove, KindCodeUnload:
			default:
				t.Fatalf("a %v record from a Reader that does not want it", w.Record().Kind())
			}
			m++
			if m > len(b)/frameSize+1 {
				t.Fatalf("%d records from %d bytes", m, len(b))
			}
		}
	})
}
