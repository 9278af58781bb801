package symbolize

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestPLTAgreesWithObjdump names PLT stubs as objdump does, for lazy .plt,
// IBT's .plt.sec and eagerly bound (-z now) binaries.
func TestPLTAgreesWithObjdump(t *testing.T) {
	stub := regexp.MustCompile(`(?m)^([0-9a-f]+) <([^>+]+@plt)>:$`)
	for _, tc := range []struct {
		name    string
		flags   []string
		section string // must exist, or the case tests nothing new
	}{
		{"lazy", []string{"-Wl,-z,lazy"}, ".plt"},
		{"ibt", []string{"-fcf-protection=full", "-Wl,-z,ibtplt", "-Wl,-z,lazy"}, ".plt.sec"},
		{"now", []string{"-Wl,-z,now"}, ".plt"},
		{"no-pie", []string{"-fno-PIE", "-no-pie"}, ".plt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := gcc(t, t.TempDir(), "prog", append(tc.flags, "testdata/prog.c")...)
			dis := run(t, "objdump", "-d", "-j", ".plt", "-j", ".plt.sec", "-j", ".plt.got", bin)
			if !strings.Contains(dis, "section "+tc.section+":") {
				t.Fatalf("no %s section in %s", tc.section, tc.name)
			}
			img, err := Load(bin, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, m := range stub.FindAllStringSubmatch(dis, -1) {
				addr, _ := strconv.ParseUint(m[1], 16, 64)
				got, ok := img.LookupAddr(addr + 4)
				if !ok || got.Name != m[2] || got.Start != addr {
					t.Errorf("LookupAddr(%#x) = %+v, %v; objdump says %s at %#x", addr+4, got, ok, m[2], addr)
				}
				seen[m[2]] = true
			}
			if !seen["puts@plt"] || !seen["printf@plt"] {
				t.Errorf("objdump shows stubs %v; want puts@plt and printf@plt", seen)
			}
		})
	}
}

// TestPLTIrelative: libc's own PLT stubs jump through slots its ifunc
// resolvers fill (IRELATIVE relocations, no symbol); objdump and perf
// name them "*ABS*+0xRESOLVER@plt", and so do we.
func TestPLTIrelative(t *testing.T) {
	const libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	dis := run(t, "objdump", "-d", "-j", ".plt", libc)
	stub := regexp.MustCompile(`(?m)^([0-9a-f]+) <(\*ABS\*\+0x[0-9a-f]+@plt)>:$`)
	stubs := stub.FindAllStringSubmatch(dis, -1)
	if len(stubs) == 0 {
		t.Fatalf("objdump shows no IRELATIVE stubs in %s's .plt", libc)
	}
	img, err := Load(libc, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range stubs {
		addr, _ := strconv.ParseUint(m[1], 16, 64)
		if got, ok := img.LookupAddr(addr + 4); !ok || got.Name != m[2] || got.Start != addr {
			t.Errorf("LookupAddr(%#x) = %+v, %v; objdump says %s at %#x", addr+4, got, ok, m[2], addr)
		}
	}
}
