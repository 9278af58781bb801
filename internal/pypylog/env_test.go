package pypylog

import "testing"

func TestLogFile(t *testing.T) {
	for value, want := range map[string]string{
		"jit-backend-addr,jit-log-opt:/tmp/pypy.log": "/tmp/pypy.log",
		"jit-log-opt,jit-backend:/tmp/pypy.log":      "/tmp/pypy.log",
		"jit:a:b":                                    "a:b",
		":log-%d":                                    "log-%d", // every section
		"jit-log:-":                                  "",       // standard error
		"-":                                          "",
		"":                                           "",
		"gc:gc.log":                                  "", // no jit-backend-addr section
		"jit-log-opt,jit-summary:x.log":              "",
		"pypy.log":                                   "", // profiling: no text, no addresses
		"+a:b.log":                                   "",
		"+x.log":                                     "",
	} {
		if got := LogFile(value); got != want {
			t.Errorf("LogFile(%q) = %q, want %q", value, got, want)
		}
	}
}
