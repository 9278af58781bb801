package cli

import (
	"bytes"
	"flag"
	"reflect"
	"testing"

	"github.com/jitprof/jitprof/internal/report"
)

// TestFilterFlags: perf report's spellings (-c, -d, -C) and perf diff's
// (-C is --comms there) fill one Filter; a bad list is an error.
func TestFilterFlags(t *testing.T) {
	want := report.Filter{Comms: []string{"node", "java"}, PIDs: []uint32{7}, TIDs: []uint32{8, 9}, DSOs: []string{"libc.so.6"}, CPUs: []int{0, 2, 3}}
	for _, c := range []struct {
		diff bool
		args []string
	}{
		{false, []string{"-c", "node,java", "--pid", "7", "--tid", "8,9", "-d", "libc.so.6", "-C", "0,2-3"}},
		{false, []string{"--comms=node,java", "--pid=7", "--tid=8,9", "--dsos=libc.so.6", "--cpu=0,2-3"}},
		{true, []string{"-C", "node,java", "--pid", "7", "--tid", "8,9", "--dso", "libc.so.6", "--cpu", "0,2-3"}},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(new(bytes.Buffer))
		var ff FilterFlags
		if c.diff {
			ff.RegisterDiff(fs)
		} else {
			ff.Register(fs)
		}
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		got, err := ff.Parse()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%v: %+v, %v\nwant %+v", c.args, got, err, want)
		}
	}
	for _, bad := range [][]string{{"--pid", "x"}, {"--cpu", "3-1"}} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var ff FilterFlags
		ff.Register(fs)
		if err := fs.Parse(bad); err != nil {
			t.Fatal(err)
		}
		if _, err := ff.Parse(); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
