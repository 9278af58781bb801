package linux

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// formatMaps writes mappings back as /proc/PID/maps lines.
func formatMaps(ms []Mapping) string {
	var b strings.Builder
	for _, m := range ms {
		perms := []byte("---p")
		for i, bit := range []uint32{unix.PROT_READ, unix.PROT_WRITE, unix.PROT_EXEC} {
			if m.Prot&bit != 0 {
				perms[i] = "rwx"[i]
			}
		}
		if m.Flags == unix.MAP_SHARED {
			perms[3] = 's'
		}
		fmt.Fprintf(&b, "%x-%x %s %08x %02x:%02x %d %s\n", m.Start, m.End, perms, m.Pgoff, m.Major, m.Minor, m.Inode, m.Path)
	}
	return b.String()
}

// FuzzParseMaps: what /proc/PID/maps parsing accepts has ranges that are
// not empty and a path, and prints and parses back the same.
func FuzzParseMaps(f *testing.F) {
	f.Add([]byte("55d4c0a00000-55d4c0a2f000 r-xp 00004000 fd:01 1835 /usr/bin/my prog\n" +
		"7f1c00000000-7f1c00100000 rwxp 00000000 00:00 0 \n" +
		"7f1c00000000-7f1c00001000 r-xs 00000000 00:01 4242                       /memfd:jit (deleted)\n" +
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n"))
	f.Add([]byte("0-1 r-xp 0 0:0 0"))
	if self, err := os.ReadFile("/proc/self/maps"); err == nil && len(self) < 8<<10 {
		f.Add(self)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := parseMaps(b)
		if err != nil {
			return
		}
		for _, m := range ms {
			if m.End <= m.Start || m.Path == "" {
				t.Fatalf("accepted %+v", m)
			}
		}
		again, err := parseMaps([]byte(formatMaps(ms)))
		if err != nil || !slices.Equal(again, ms) {
			t.Fatalf("printed and parsed back: %+v, %v\nwant %+v", again, err, ms)
		}
	})
}

// FuzzParseModules: what /proc/modules parsing accepts prints and parses
// back the same.
func FuzzParseModules(f *testing.F) {
	f.Add([]byte("kvm_intel 380928 0 - Live 0xffffffffc0a00000\nkvm 1146880 1 kvm_intel, Live 0x0000000000000000\n"))
	f.Add([]byte("x 1 2 - Loading 0x10 (OE)\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		mods, err := parseModules(b)
		if err != nil {
			return
		}
		var text strings.Builder
		for _, m := range mods {
			if m.Name == "" || strings.ContainsAny(m.Name, " \t\n") {
				t.Fatalf("accepted module %+v", m)
			}
			fmt.Fprintf(&text, "%s %d 0 - Live %#x\n", m.Name, m.Size, m.Start)
		}
		again, err := parseModules([]byte(text.String()))
		if err != nil || !slices.Equal(again, mods) {
			t.Fatalf("printed and parsed back: %+v, %v\nwant %+v", again, err, mods)
		}
	})
}

// FuzzParseStatus: /proc/PID/status parsing finds non-negative ids, the
// ones its Tgid and PPid lines give.
func FuzzParseStatus(f *testing.F) {
	f.Add([]byte("Name:\tbash\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t1234\nNgid:\t0\nPid:\t1234\nPPid:\t1\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n"))
	f.Add([]byte("Tgid: -1\nPPid: 2\n"))
	if self, err := os.ReadFile("/proc/self/status"); err == nil {
		f.Add(self)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		id, tgid, ppid, err := parseStatus(b)
		if err != nil {
			return
		}
		if tgid < 0 || ppid < 0 || id.UID < 0 || id.GID < 0 || id.NSPID < 0 {
			t.Fatalf("tgid %d, ppid %d, identity %+v", tgid, ppid, id)
		}
		for _, want := range []string{"Tgid:", "PPid:"} {
			if !strings.Contains(string(b), want) {
				t.Fatalf("ids %d, %d from a file without %s", tgid, ppid, want)
			}
		}
	})
}

// FuzzParseCPUList: an accepted list is sorted without duplicates, within
// the kernel's range of CPU numbers, and prints and parses back the same.
func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0", "0-3", "0-1,5,3-3", "2,0,2", "1-", "-1", "0-99999999", "65535", "0-65535,1-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			return
		}
		if len(cpus) == 0 || cpus[0] < 0 || cpus[len(cpus)-1] >= maxCPUs || !slices.IsSorted(cpus) || len(slices.Compact(slices.Clone(cpus))) != len(cpus) {
			t.Fatalf("%q: %v", s, cpus)
		}
		var parts []string
		for _, c := range cpus {
			parts = append(parts, strconv.Itoa(c))
		}
		again, err := ParseCPUList(strings.Join(parts, ","))
		if err != nil || !slices.Equal(again, cpus) {
			t.Fatalf("%q printed and parsed back: %v, %v", s, again, err)
		}
	})
}

// FuzzEnvironValue: environValue finds what splitting the environment
// at its NULs finds, the first entry NAME=..., for any bytes (a
// process's environment is its own).
func FuzzEnvironValue(f *testing.F) {
	f.Add([]byte("HOME=/root\x00PYPYLOGX=no\x00PYPYLOG=jit:/tmp/a=b.log\x00PYPYLOG=second\x00"), "PYPYLOG")
	f.Add([]byte("PYPYLOG=\x00=x\x00\x00A=b"), "A")
	f.Fuzz(func(t *testing.T, env []byte, name string) {
		got, ok := environValue(env, name)
		var want string
		found := false
		for _, e := range strings.Split(string(env), "\x00") {
			if v, is := strings.CutPrefix(e, name+"="); is {
				want, found = v, true
				break
			}
		}
		if ok != found || got != want {
			t.Errorf("environValue(%q, %q) = %q, %v; splitting finds %q, %v", env, name, got, ok, want, found)
		}
	})
}
