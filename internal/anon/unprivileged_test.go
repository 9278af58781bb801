package anon

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/trust"
)

func TestHandlerCred(t *testing.T) {
	for _, tc := range []struct {
		uid, gid int
		want     trust.Cred
	}{
		{1000, 100, trust.Cred{UID: 1000, GID: 100}},
		{0, 0, trust.Root},
		{1000, trust.UnknownOwner, trust.Cred{UID: 1000, GID: trust.Nobody.GID}},
		{trust.UnknownOwner, trust.UnknownOwner, trust.Nobody},
		{trust.UnknownOwner, 0, trust.Nobody},
	} {
		if got := handlerCred(&Process{UID: tc.uid, GID: tc.gid}); got != tc.want {
			t.Errorf("uid %d gid %d: runs as %+v, want %+v", tc.uid, tc.gid, got, tc.want)
		}
	}
}

// TestStartAs: as root, a handler starts as the user it is given, with no
// supplementary groups, no capabilities, even as uid 0, and
// no_new_privs; jitprof keeps its own.
func TestStartAs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root's jitprof changes whom a handler runs as")
	}
	for _, c := range []trust.Cred{trust.Nobody, trust.Root} {
		cmd := exec.Command("/bin/sh", "-c", "grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/$$/status")
		var out strings.Builder
		cmd.Stdout = &out
		if err := startAs(cmd, c); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		status := strings.Join(strings.Fields(out.String()), " ")
		ids := func(n int) string { return strings.Repeat(" "+itoa(n), 4) }
		for _, want := range []string{"Uid:" + ids(c.UID) + " ", "Gid:" + ids(c.GID) + " ", "Groups: Cap",
			"CapInh: 0000000000000000", "CapPrm: 0000000000000000", "CapEff: 0000000000000000",
			"CapBnd: 0000000000000000", "CapAmb: 0000000000000000", "NoNewPrivs: 1"} {
			if !strings.Contains(status, want) {
				t.Errorf("as %+v the handler runs with %q, want %q", c, status, want)
			}
		}
	}
	// This goroutine's thread is not the launcher's, which its goroutine
	// keeps.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		t.Fatal(err)
	}
	if s := string(self); !strings.Contains(s, "NoNewPrivs:\t0") || strings.Contains(s, "CapBnd:\t0000000000000000") {
		t.Errorf("jitprof lost its own rights:\n%s", s)
	}
}
