package symbolize

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// addr2line runs "addr2line -a -f -i" and returns each address's frames,
// innermost first, with file names reduced to their base.
func addr2line(t *testing.T, bin string, addrs []uint64) map[uint64][]Frame {
	t.Helper()
	args := []string{"-a", "-f", "-i", "-e", bin}
	for _, a := range addrs {
		args = append(args, fmt.Sprintf("%#x", a))
	}
	out := map[uint64][]Frame{}
	var cur uint64
	lines := strings.Split(strings.TrimSpace(run(t, "addr2line", args...)), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "0x") {
			cur, _ = strconv.ParseUint(lines[i][2:], 16, 64)
			continue
		}
		if i+1 >= len(lines) {
			t.Fatalf("addr2line: odd output at %q", lines[i])
		}
		loc, _, _ := strings.Cut(lines[i+1], " (discriminator")
		file, line, _ := strings.Cut(loc, ":")
		n, _ := strconv.Atoi(line)
		if file == "??" {
			file = ""
		}
		out[cur] = append(out[cur], Frame{Func: lines[i], File: filepath.Base(file), Line: n})
		i++
	}
	return out
}

func TestFramesAgreeWithAddr2line(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"pie-dwarf5", []string{"-fPIE", "-pie"}},
		{"no-pie-dwarf4", []string{"-fno-PIE", "-no-pie", "-gdwarf-4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := gcc(t, t.TempDir(), "prog", append(tc.flags, "testdata/prog.c")...)
			img, err := Load(bin, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var addrs []uint64
			for _, s := range nmFuncs(t, bin) {
				if s.name == "compute" || s.name == "main" || s.name == "leaf" {
					for a := s.addr; a < s.addr+s.size; a++ {
						addrs = append(addrs, a)
					}
				}
			}
			want := addr2line(t, bin, addrs)
			inlined := 0
			for _, a := range addrs {
				got, err := img.Frames(a)
				if err != nil {
					t.Fatal(err)
				}
				for i := range got {
					got[i].File = filepath.Base(got[i].File)
				}
				if fmt.Sprint(got) != fmt.Sprint(want[a]) {
					t.Errorf("Frames(%#x) = %v\naddr2line:       %v", a, got, want[a])
				}
				if len(got) > 1 && got[0].Func == "square" && got[1].Func == "compute" {
					inlined++
				}
			}
			t.Logf("%d addresses compared, %d with square inlined into compute", len(addrs), inlined)
			if inlined == 0 {
				t.Error("no address showed square inlined into compute")
			}
		})
	}
}

func TestFramesWithoutDWARF(t *testing.T) {
	dir := t.TempDir()
	bin := gcc(t, dir, "prog", "testdata/prog.c")
	run(t, "strip", "--strip-debug", bin)
	img, err := Load(bin, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := img.Frames(0x1000); !errors.Is(err, ErrNoDebugInfo) {
		t.Fatalf("Frames on a binary without DWARF: err = %v, want ErrNoDebugInfo", err)
	}
	if _, ok := img.LookupAddr(nmAddr(nmFuncs(t, bin), "leaf")); !ok {
		t.Error("symbols lost with the debug info")
	}
}
