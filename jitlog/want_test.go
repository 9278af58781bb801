package jitlog

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"testing"
)

// TestWant: a Reader and a Tail that Want the code's records return the
// header and those, as a full read has them, and step over the regions
// (the Tail's Frames counting them); a Reader that wants the TSC
// regions still converts their times by the clock records it steps over.
func TestWant(t *testing.T) {
	eachClock(t, func(t *testing.T, _ bool) {
		l := openTest(t, Options{Dir: t.TempDir()})
		for i := range 20 {
			seq, err := l.CodeLoad(0x10000+uintptr(i)*0x100, 0x80, fmt.Sprint("f", i), nil)
			if err != nil {
				t.Fatal(err)
			}
			for range 5 {
				l.Enter(1, seq)
				l.Exit(1)
			}
			if i%3 == 0 {
				if err := l.CodeUnload(seq); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		all, err := Read(l.Path(), nil)
		if err != nil {
			t.Fatal(err)
		}
		code := CodeKinds
		only := func(kinds ...Kind) []Record {
			var l []Record
			for _, r := range all {
				for _, k := range append(kinds, KindHeader) {
					if r.Kind() == k {
						l = append(l, r)
					}
				}
			}
			return l
		}
		f, err := os.Open(l.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fi, _ := f.Stat()
		read := func(kinds ...Kind) []Record {
			r, err := NewReader(f, fi.Size())
			if err != nil {
				t.Fatal(err)
			}
			r.Want(kinds...)
			var l []Record
			for r.Next() {
				l = append(l, r.Record())
			}
			if err := r.Err(); err != nil && err != io.EOF {
				t.Fatal(err)
			}
			return l
		}
		want := only(code...)
		if len(want) != 1+20+7 {
			t.Fatalf("%d records of code and the header, want 28", len(want))
		}
		if got := read(code...); !reflect.DeepEqual(got, want) {
			t.Errorf("a Reader wanting the code's records: %d records, want %d", len(got), len(want))
		}
		if got := read(); !reflect.DeepEqual(got, all) {
			t.Errorf("a Reader wanting every record: %d records, want %d", len(got), len(all))
		}
		regions := []Kind{KindRegionEnter, KindRegionExit, KindRegionEnterTSC, KindRegionExitTSC}
		if got, want := read(regions...), only(regions...); len(want) != 1+200 || !reflect.DeepEqual(got, want) {
			t.Errorf("a Reader wanting the regions: %d records, want %d of %d (times converted as a full read's)", len(got), 201, len(want))
		}

		tl, err := OpenTail(l.Path(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tl.Close()
		tl.Alive = func(*Header) bool { return false }
		tl.Want(code...)
		got, err := tl.Poll()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("a Tail wanting the code's records: %d records, want %d", len(got), len(want))
		}
		if tl.Frames() != len(all)-1 {
			t.Errorf("the Tail went over %d records, want %d (all but the header)", tl.Frames(), len(all)-1)
		}
	})
}
