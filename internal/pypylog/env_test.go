package pypylog

import "testing"

func TestLogFile(t *testing.T) {
	for value, want := range map[string]string{
		"jit-backend-addr,jit-log-opt:/tmp/pypy.log": "/tmp/pypy.log",
		":log-%d":   "log-%d",
		"pypy.log":  "pypy.log",
		"jit-log:-": "",
		"-":         "",
		"":          "",
		"jit:a:b":   "a:b",
	} {
		if got := LogFile(value); got != want {
			t.Errorf("LogFile(%q) = %q, want %q", value, got, want)
		}
	}
}
