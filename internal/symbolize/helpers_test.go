package symbolize

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
)

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(perftest.Need(t, name), args...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// gcc compiles testdata sources into dir/out with the flags the profiler's
// users build with.
func gcc(t testing.TB, dir, out string, args ...string) string {
	t.Helper()
	bin := filepath.Join(dir, out)
	base := []string{"-O2", "-g", "-fno-omit-frame-pointer", "-Wl,--build-id", "-o", bin}
	run(t, "gcc", append(base, args...)...)
	return bin
}

// nmSym is one symbol as nm prints it.
type nmSym struct {
	name string
	typ  byte
	addr uint64
	size uint64
}

// nmFuncs runs nm and returns its text symbols (types t, T, i; weak symbols may be data).
func nmFuncs(t testing.TB, args ...string) []nmSym {
	t.Helper()
	var out []nmSym
	sc := bufio.NewScanner(strings.NewReader(run(t, "nm", append([]string{"--defined-only", "-S"}, args...)...)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		s := nmSym{name: f[len(f)-1], typ: f[len(f)-2][0]}
		s.addr, _ = strconv.ParseUint(f[0], 16, 64)
		if len(f) == 4 {
			s.size, _ = strconv.ParseUint(f[1], 16, 64)
		}
		if strings.ContainsRune("tTi", rune(s.typ)) {
			out = append(out, s)
		}
	}
	return out
}

// runMaps runs a test program with "maps" and returns the function
// addresses it printed and its /proc/self/maps lines.
func runMaps(t testing.TB, bin string) (map[string]uint64, []mapping) {
	t.Helper()
	out, err := exec.Command(bin, "maps").Output()
	if err != nil {
		t.Fatalf("%s maps: %v", bin, err)
	}
	addrs := map[string]uint64{}
	var maps []mapping
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] == "map" {
			if len(f) < 7 {
				continue
			}
			lo, hi, _ := strings.Cut(f[1], "-")
			var m mapping
			m.start, _ = strconv.ParseUint(lo, 16, 64)
			m.end, _ = strconv.ParseUint(hi, 16, 64)
			m.pgoff, _ = strconv.ParseUint(f[3], 16, 64)
			m.path = f[6]
			maps = append(maps, m)
			continue
		}
		addrs[f[0]], _ = strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
	}
	return addrs, maps
}

// mapping is one /proc/PID/maps line, the same fields an MMAP2 record has.
type mapping struct {
	start, end, pgoff uint64
	path              string
}

// fileOffset does what the report side does with a sample: find its
// mapping and turn the IP into an offset in the mapped file.
func fileOffset(t testing.TB, maps []mapping, path string, ip uint64) uint64 {
	t.Helper()
	for _, m := range maps {
		if m.path == path && m.start <= ip && ip < m.end {
			return ip - m.start + m.pgoff
		}
	}
	t.Fatalf("no mapping of %s holds %#x", path, ip)
	return 0
}
