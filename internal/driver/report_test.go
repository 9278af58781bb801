package driver

import (
	"reflect"
	"strings"
	"testing"
)

func TestViewKeys(t *testing.T) {
	cases := []struct {
		separate, merge string
		symbols         bool
		want            string
	}{
		{"", "", false, "dso"},
		{"lib", "", true, "userapp,dso,sym"},
		{"kernel", "", false, "app,dso"},
		{"lib,kernel", "", false, "app,dso"},
		{"kernel,lib", "", false, "app,dso"},
		{"thread,lib", "", false, "pid,tid,userapp,dso"},
		{"all", "", false, "pid,tid,cpu,app,dso"},
		{"cpu,lib", "lib", false, "cpu,dso"},
		{"all", "all", true, "dso,sym"},
	}
	for _, c := range cases {
		if got := (View{Symbols: c.symbols, Separate: c.separate, Merge: c.merge}).Keys(); !reflect.DeepEqual(got, strings.Split(c.want, ",")) {
			t.Errorf("--separate=%s --merge=%s -l=%v: %q, want %s", c.separate, c.merge, c.symbols, got, c.want)
		}
	}
}
