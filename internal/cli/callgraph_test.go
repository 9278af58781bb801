package cli

import (
	"reflect"
	"strings"
	"testing"
)

func TestJoinCallGraphSpec(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"-g caller -s sym", "-g=caller -s sym"},
		{"-g -s sym", "-g -s sym"},
		{"--call-graph graph,0.5,callee", "--call-graph=graph,0.5,callee"},
		{"-g 0.5", "-g=0.5"},
		{"-g -i data", "-g -i data"},
		{"-g perf.data", "-g perf.data"},
		{"-- -g caller", "-- -g caller"},
	} {
		if got := JoinCallGraphSpec(strings.Fields(c.in)); !reflect.DeepEqual(got, strings.Fields(c.want)) {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}
