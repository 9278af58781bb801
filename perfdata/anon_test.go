package perfdata

import "testing"

func TestIsAnon(t *testing.T) {
	cases := []struct {
		name  string
		flags uint32
		want  bool
	}{
		// perf's anonymous memory (tools/perf/util/map.c).
		{"//anon", 0, true},
		{"/dev/zero (deleted)", 0, true}, // MAP_SHARED|MAP_ANONYMOUS
		{"/dev/zero", 0, true},
		{"/anon_hugepage (deleted)", 0, true},
		{"/anon_hugepage", 0, true},
		{"/mnt/huge/code", MapHugeTLB, true}, // a hugetlbfs file
		// What perf 6.1 takes for files, and jitprof for anonymous memory.
		{"/memfd:v8-code (deleted)", 0, true},
		{"memfd:jit", 0, true},
		{"[anon:v8 code space]", 0, true},
		{"[anon_shmem:jit]", 0, true},
		{"", 0, true},
		// Files and perf's "no DSO" memory are not.
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", 0, false},
		{"/tmp/jit-123.dump", 0, false},
		{"/dev/zeros", 0, true}, // perf compares the prefix only, and so do we
		{"/home/u/dev/zero", 0, false},
		{"[heap]", 0, false},
		{"[stack]", 0, false},
		{"[vdso]", 0, false},
		{"/SYSV00000000 (deleted)", 0, false},
		{"/usr/lib/libc.so.6", 0x2, false}, // MAP_PRIVATE
		{"//anonymous", 0, false},
	}
	for _, c := range cases {
		if got := IsAnon(c.name, c.flags); got != c.want {
			t.Errorf("IsAnon(%q, %#x) = %v, want %v", c.name, c.flags, got, c.want)
		}
	}
	m := Mmap{Version2: true, Filename: "/dev/zero (deleted)", Flags: 0x1}
	if !m.IsAnon() {
		t.Error("a shared anonymous MMAP2 is not anonymous")
	}
}
