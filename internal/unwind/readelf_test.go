package unwind

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/symbolize"
)

// readelfColumns are readelf's names of the DWARF columns a ruleset keeps.
var readelfColumns = map[string]int{
	"rax": 0, "rdx": 1, "rcx": 2, "rbx": 3, "rsi": 4, "rdi": 5, "rbp": 6, "rsp": 7,
	"r8": 8, "r9": 9, "r10": 10, "r11": 11, "r12": 12, "r13": 13, "r14": 14, "r15": 15, "ra": 16,
}

// TestTableAgreesWithReadelf compiles the .eh_frame of Debian's own
// binaries and checks every row binutils' readelf decodes (readelf
// --debug-dump=frames-interp): the CFA and the rule of each column, at
// each row's address.
func TestTableAgreesWithReadelf(t *testing.T) {
	if _, err := exec.LookPath("readelf"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("readelf (binutils) is missing: scripts/setup.sh installs it")
		}
		t.Skip("readelf (binutils) is not installed")
	}
	for _, path := range []string{"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/usr/bin/xz"} {
		t.Run(path, func(t *testing.T) {
			if _, err := os.Stat(path); err != nil {
				t.Skipf("%s: %v", path, err)
			}
			im, err := symbolize.Load(path, symbolize.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cf, err := im.CallFrames()
			if err != nil {
				t.Fatal(err)
			}
			tb, err := Build(Section{cf.EHFrame, cf.EHFrameAddr}, Section{})
			if err != nil {
				t.Fatal(err)
			}
			// readelf exits 1 on binaries whose .gnu_debuglink names a
			// file it cannot find, after printing the frames.
			out, err := exec.Command("readelf", "--debug-dump=frames-interp", path).Output()
			if len(out) == 0 {
				t.Fatalf("readelf: %v", err)
			}
			rows := checkReadelf(t, tb, out)
			if rows < 1000 {
				t.Fatalf("only %d rows checked", rows)
			}
			t.Logf("%d rows agree", rows)
		})
	}
}

// checkReadelf checks tb against readelf's rows and returns how many
// it checked.
func checkReadelf(t *testing.T, tb *Table, out []byte) int {
	var cols []string
	checked, bad := 0, 0
	// A register rule reads "r9 (r9)": the DWARF number, then the name.
	named := regexp.MustCompile(` \([a-z0-9]+\)`)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(named.ReplaceAllString(sc.Text(), ""))
		switch {
		case len(f) >= 2 && f[0] == "LOC" && f[1] == "CFA":
			cols = f[2:]
			continue
		case len(f) < 2 || len(f[0]) != 16 || strings.Contains(sc.Text(), "FDE") || strings.Contains(sc.Text(), "CIE"):
			continue
		}
		loc, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil || loc == 0 {
			continue // the CIE's own rows
		}
		rs := tb.lookup(loc)
		if rs == nil {
			t.Errorf("%#x: no row; readelf: %s", loc, sc.Text())
			bad++
			continue
		}
		if !cfaAgrees(rs.cfa, f[1]) {
			t.Errorf("%#x: CFA %+v; readelf %s", loc, rs.cfa, f[1])
			bad++
		}
		for i, c := range cols {
			reg, ok := readelfColumns[c]
			if !ok || 2+i >= len(f) {
				continue
			}
			if !ruleAgrees(rs.regs[reg], f[2+i]) {
				t.Errorf("%#x: %s %+v; readelf %s", loc, c, rs.regs[reg], f[2+i])
				bad++
			}
		}
		checked++
		if bad > 20 {
			t.Fatal("too many differences")
		}
	}
	return checked
}

func cfaAgrees(r rule, s string) bool {
	if s == "exp" {
		return r.kind == cfaExpr
	}
	for name, reg := range readelfColumns {
		if rest, ok := strings.CutPrefix(s, name); ok && len(rest) > 0 && (rest[0] == '+' || rest[0] == '-') {
			off, err := strconv.Atoi(rest)
			return err == nil && r.kind == cfaReg && int(r.reg) == reg && int(r.off) == off
		}
	}
	return false
}

func ruleAgrees(r rule, s string) bool {
	switch {
	case s == "u":
		// readelf's "u" is both a register no instruction named
		// (the psABI's default here) and DW_CFA_undefined.
		return r.kind == ruleUndefined || r.kind == ruleSame || r.kind == ruleValOffset
	case s == "s":
		return r.kind == ruleSame
	case s == "exp":
		return r.kind == ruleExpr
	case s == "vexp":
		return r.kind == ruleValExpr
	case strings.HasPrefix(s, "c"):
		off, err := strconv.Atoi(s[1:])
		return err == nil && r.kind == ruleOffset && int(r.off) == off
	case strings.HasPrefix(s, "v"):
		off, err := strconv.Atoi(s[1:])
		return err == nil && r.kind == ruleValOffset && int(r.off) == off
	}
	reg, err := strconv.Atoi(strings.TrimPrefix(s, "r"))
	return err == nil && r.kind == ruleRegister && int(r.reg) == reg
}
