package pathtime

import (
	"fmt"
	"strings"
	"testing"
)

// TestWriteTable: nanoseconds as durations, ticks as numbers, and the
// sample columns only with samples.
func TestWriteTable(t *testing.T) {
	res := &Result{Totals: []Total{{Region: 3, Time: 1500000, Entries: 2, Percent: 75, Samples: 4, OnCPU: 1000000, Self: 3}, {Region: 9, Time: 500000, Entries: 1, Percent: 25}}}
	name := func(r uint64) string { return fmt.Sprint("region ", r) }
	cases := []struct {
		t    Table
		want string
	}{
		{Table{Name: name}, "   Time%           Time   Entries  Region\n" +
			"  75.00%          1.5ms         2  region 3\n" +
			"  25.00%          500µs         1  region 9\n"},
		{Table{Name: name, Ticks: true}, "   Time%            Ticks   Entries  Region\n" +
			"  75.00%          1500000         2  region 3\n" +
			"  25.00%           500000         1  region 9\n"},
		{Table{Name: name, Sampled: true}, "   Time%           Time         On-CPU  Samples     Self   Entries  Region\n" +
			"  75.00%          1.5ms            1ms        4        3         2  region 3\n" +
			"  25.00%          500µs             0s        0        0         1  region 9\n"},
	}
	for _, c := range cases {
		var b strings.Builder
		if err := WriteTable(&b, res, c.t); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("%+v:\n%s\nwant\n%s", c.t, b.String(), c.want)
		}
	}
}
