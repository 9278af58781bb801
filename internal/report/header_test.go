package report

import "testing"

func TestCommandLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"perf", "record", "-g", "./app"}, "perf record -g ./app"},
		{[]string{"python3", "-c", "s = 0\nprint(s)"}, `python3 -c "s = 0\nprint(s)"`},
		{[]string{"sh", "-c", "", `a"b`}, `sh -c "" "a\"b"`},
	} {
		if got := commandLine(c.args); got != c.want {
			t.Errorf("commandLine(%q) = %s, want %s", c.args, got, c.want)
		}
	}
}
