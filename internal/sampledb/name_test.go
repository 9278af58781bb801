package sampledb

import (
	"errors"
	"path"
	"strings"
	"testing"
)

func fileImage(p string) Image { return Image{Kind: ImageFile, Name: p} }

func TestNameExamples(t *testing.T) {
	xmms, libc := fileImage("/usr/bin/xmms"), fileImage("/lib/tls/libc-2.3.2.so")
	vmlinux := Image{Kind: ImageKernel, Name: "vmlinux"}
	anon := Image{Kind: ImageAnon, Name: "anon", TGID: 3189, Start: 0xf72aa000, End: 0xf72fa000}
	jit := Image{Kind: ImageJIT, Name: "jitlog", TGID: 77, Start: 0x7f0000000000, End: 0x7f0000100000}
	for _, tc := range []struct {
		key  FileKey
		name string
	}{
		// Seed 003's example.
		{FileKey{App: xmms, Dep: libc, Event: "CPU_CLK_UNHALTED", Count: 100000, TGID: 28082, TID: 28089, CPU: 0},
			"{root}/usr/bin/xmms/{dep}/{root}/lib/tls/libc-2.3.2.so/CPU_CLK_UNHALTED.100000.0.28082.28089.0"},
		{FileKey{App: vmlinux, Dep: vmlinux, Event: "cpu-clock", Count: 999, Freq: true, TGID: All, TID: All, CPU: All},
			"{kern}/vmlinux/{dep}/{kern}/vmlinux/cpu-clock.F999.0.all.all.all"},
		{FileKey{App: xmms, Dep: anon, Event: "cpu-clock", Count: 1, TGID: All, TID: All, CPU: 3},
			"{root}/usr/bin/xmms/{dep}/{anon:anon}/3189.0xf72aa000.0xf72fa000/cpu-clock.1.0.all.all.3"},
		{FileKey{App: xmms, Dep: Image{Kind: ImageAnon, Name: "[heap]", TGID: All}, Event: "cpu-clock", Count: 1, TGID: All, TID: All, CPU: All},
			"{root}/usr/bin/xmms/{dep}/{anon:[heap]}/all.0x0.0x0/cpu-clock.1.0.all.all.all"},
		{FileKey{App: xmms, Dep: jit, Event: "cpu-clock", Count: 1, TGID: All, TID: All, CPU: All},
			"{root}/usr/bin/xmms/{dep}/{jit:jitlog}/77.0x7f0000000000.0x7f0000100000/cpu-clock.1.0.all.all.all"},
		{FileKey{App: xmms, Dep: xmms, CG: libc, Event: "cycles", Count: 4000, UnitMask: 3, TGID: All, TID: All, CPU: All},
			"{root}/usr/bin/xmms/{dep}/{root}/usr/bin/xmms/{cg}/{root}/lib/tls/libc-2.3.2.so/cycles.4000.3.all.all.all"},
		{FileKey{App: xmms, Dep: libc, Variant: 2, Event: "cpu/event=0x3c/", Count: 1, TGID: All, TID: All, CPU: All},
			"{root}/usr/bin/xmms/{dep}/{root:2}/lib/tls/libc-2.3.2.so/cpu%2Fevent=0x3c%2F.1.0.all.all.all"},
		{FileKey{App: vmlinux, Dep: Image{Kind: ImageKernel, Name: "[kernel.kallsyms]"}, Variant: 1, Event: "sched:sched_switch", Count: 1, TGID: All, TID: All, CPU: All},
			"{kern}/vmlinux/{dep}/{kern:1}/[kernel.kallsyms]/sched:sched_switch.1.0.all.all.all"},
		// The vDSO: user code, keyed by offset, named as perf names it.
		{FileKey{App: xmms, Dep: Image{Kind: ImageVDSO, Name: VDSOName}, Event: "cpu-clock", Count: 1, TGID: All, TID: All, CPU: All},
			"{root}/usr/bin/xmms/{dep}/{vdso}/cpu-clock.1.0.all.all.all"},
		{FileKey{App: xmms, Dep: xmms, CG: Image{Kind: ImageVDSO, Name: VDSOName}, Variant: 1, Event: "cpu-clock", Count: 1, TGID: All, TID: All, CPU: All},
			"{root}/usr/bin/xmms/{dep}/{root:1}/usr/bin/xmms/{cg}/{vdso}/cpu-clock.1.0.all.all.all"},
	} {
		got, err := Name(tc.key)
		if err != nil {
			t.Fatalf("Name(%+v): %v", tc.key, err)
		}
		if got != tc.name {
			t.Errorf("Name(%+v)\n got %s\nwant %s", tc.key, got, tc.name)
		}
		back, err := Parse(got)
		if err != nil {
			t.Fatalf("Parse(%s): %v", got, err)
		}
		if back != tc.key {
			t.Errorf("Parse(%s) = %+v, want %+v", got, back, tc.key)
		}
	}
}

// safeComponents checks what a name must be to stay inside the session:
// every component a plain directory name of at most NAME_MAX bytes, and
// room for the hidden temporary name of the last one.
func safeComponents(t testing.TB, name string) {
	t.Helper()
	comps := strings.Split(name, "/")
	for i, c := range comps {
		switch {
		case c == "" || c == "." || c == "..":
			t.Fatalf("component %d of %q is %q", i, name, c)
		case strings.HasPrefix(c, "."):
			t.Fatalf("component %d of %q is hidden", i, name)
		case len(c) > 255 || i == len(comps)-1 && len(c) > 254:
			t.Fatalf("component %d of %q has %d bytes", i, name, len(c))
		case strings.ContainsAny(c, "\x00"):
			t.Fatalf("component %d of %q has a NUL", i, name)
		}
		for j := 0; j < len(c); j++ {
			if c[j] < 0x21 || c[j] > 0x7e {
				t.Fatalf("component %d of %q has byte %#x", i, name, c[j])
			}
		}
	}
	if path.Clean(name) != name || strings.HasPrefix(name, "/") {
		t.Fatalf("%q is not a clean relative path", name)
	}
}

func TestNameHostilePaths(t *testing.T) {
	long := strings.Repeat("x", 300)
	paths := []string{
		"/", "//", "/..", "/../../etc/passwd", "/a/../../b", "/./.", "/.hidden/.x",
		"/a//b/", "/a\x00b", "/\xff\xfe/\x80", "/caf\xc3\xa9", "/{dep}/{root}/x", "/{cg}",
		"/a/%41/%+/%", "/" + long, "/" + long + "/" + strings.Repeat(".", 400),
		"/" + strings.Repeat("%", 200), "/" + strings.Repeat("\xff", 100),
		"/" + strings.Repeat("a/", 3000), "/with space/and\nnewline\ttab",
	}
	seen := map[string]string{}
	for _, p := range paths {
		for _, kind := range []ImageKind{ImageFile, ImageKernel} {
			im := Image{Kind: kind, Name: p}
			k := FileKey{App: im, Dep: im, Event: "e", Count: 1, TGID: All, TID: All, CPU: All}
			name, err := Name(k)
			if err != nil {
				t.Fatalf("Name(%q): %v", p, err)
			}
			safeComponents(t, name)
			if other, ok := seen[name]; ok {
				t.Fatalf("%q and %q both named %q", p, other, name)
			}
			seen[name] = p
			back, err := Parse(name)
			if err != nil || back != k {
				t.Fatalf("Parse(Name(%q)) = %+v, %v", p, back, err)
			}
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, name := range []string{
		"",
		"e.1.0.all.all.all",
		"{root}/a/{dep}/{root}/a/e.1.0.all.all",
		"{root}/a/{dep}/{root}/a/e.1.0.all.all.all.all",
		"{root}/%61/{dep}/{root}/a/e.1.0.all.all.all", // 'a' escaped
		"{root}/%2e/{dep}/{root}/a/e.1.0.all.all.all", // lowercase escape
		"{root}/../{dep}/{root}/a/e.1.0.all.all.all",
		"{root}/./{dep}/{root}/a/e.1.0.all.all.all",
		"{root}//{dep}/{root}/a/e.1.0.all.all.all",
		"{root}/a/{dep}/{root}/a/e.01.0.all.all.all",
		"{root}/a/{dep}/{root}/a/e.1.0.4294967295.all.all",
		"{root}/a/{dep}/{root}/a/e.1.0.-1.all.all",
		"{root}/a/{dep}/{root:0}/a/e.1.0.all.all.all",
		"{root}/a/{dep}/{root:01}/a/e.1.0.all.all.all",
		"{root:1}/a/{dep}/{root}/a/e.1.0.all.all.all", // variants are the dep's
		"{root}/a/{dep}/{anon:x}/1.0x2.0x1/e.1.0.all.all.all",
		"{root}/a/{dep}/{anon:x}/1.0x02.0x3/e.1.0.all.all.all",
		"{root}/a/{dep}/{anon:x/1.0x2.0x3/e.1.0.all.all.all",
		"{root}/a/{dep}/{kern}/{cg}/{root}/b/e.1.0.all.all.all",
		"{root}/a/{dep}/{root}/a/{cg}/e.1.0.all.all.all",
		"{root}/a%+/{dep}/{root}/a/e.1.0.all.all.all", // a short chunk continued
		"{root}/a/{dep}/{root}/a/{dep}/{root}/a/e.1.0.all.all.all",
		"{root}/a/{dep}/{root}/a/e%2E.1.0.all.all.all%",
		"/{root}/a/{dep}/{root}/a/e.1.0.all.all.all",
		"{root}/a/{dep}/{root}/a/.e.1.0.all.all.all",
	} {
		if k, err := Parse(name); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", name, k)
		} else if !errors.Is(err, ErrName) {
			t.Errorf("Parse(%q): %v does not wrap ErrName", name, err)
		}
	}
}

func TestNameRefuses(t *testing.T) {
	a := fileImage("/a")
	for _, k := range []FileKey{
		{App: a, Dep: a},                                    // no event
		{App: Image{}, Dep: a, Event: "e"},                  // no app kind
		{App: fileImage("rel"), Dep: a, Event: "e"},         // relative path
		{App: a, Dep: Image{Kind: ImageKernel}, Event: "e"}, // empty kernel name
		{App: a, Dep: Image{Kind: ImageAnon, Start: 2, End: 1}, Event: "e"},
		{App: a, Dep: Image{Kind: ImageAnon, Name: "x"}, Variant: 1, Event: "e"},
		{App: a, Dep: a, Event: strings.Repeat("é", 30)},
		{App: a, Dep: Image{Kind: ImageJIT, Name: strings.Repeat("%", 81)}, Event: "e"},
	} {
		if name, err := Name(k); err == nil {
			t.Errorf("Name(%+v) = %q, want an error", k, name)
		}
	}
}

// FuzzName builds keys from arbitrary fields: every name Name makes is
// safe to create under the session directory and parses back to its key.
func FuzzName(f *testing.F) {
	f.Add(uint8(0), "/usr/bin/xmms", "/lib/libc.so", "", "CPU_CLK", uint64(100000), uint32(1), uint32(2), uint32(0), uint64(0), uint64(0), uint8(0))
	f.Add(uint8(0x5a), "/..", "anon", "jitlog", "cpu/x=1/", uint64(9), uint32(All), uint32(All), uint32(All), uint64(0x1000), uint64(0x2000), uint8(3))
	f.Add(uint8(0xff), "/"+strings.Repeat("\xff.", 200), "..", "/{cg}", ".", uint64(0), uint32(0), uint32(All), uint32(7), uint64(1), uint64(1), uint8(1))
	f.Fuzz(func(t *testing.T, kinds uint8, app, dep, cg, event string, count uint64, tgid, tid, cpu uint32, start, end uint64, variant uint8) {
		img := func(k uint8, name string) Image {
			im := Image{Kind: ImageKind(k%4 + 1), Name: name}
			if im.anon() {
				im.TGID, im.Start, im.End = tgid, start, end
			}
			return im
		}
		k := FileKey{
			App: img(kinds, app), Dep: img(kinds>>2, dep), Event: event, Count: count,
			Freq: kinds&0x80 != 0, UnitMask: count >> 7, TGID: tgid, TID: tid, CPU: cpu, Variant: variant,
		}
		if kinds&0x40 != 0 {
			k.CG = img(kinds>>4, cg)
		}
		name, err := Name(k)
		if err != nil {
			if !errors.Is(err, ErrName) {
				t.Fatalf("Name: %v does not wrap ErrName", err)
			}
			return
		}
		safeComponents(t, name)
		back, err := Parse(name)
		if err != nil {
			t.Fatalf("Parse(%q): %v", name, err)
		}
		if back != k {
			t.Fatalf("Parse(Name(k)) = %+v, want %+v", back, k)
		}
	})
}

// FuzzParse parses arbitrary names: what it accepts is safe and is exactly
// what Name makes of the key, so two names never share a key.
func FuzzParse(f *testing.F) {
	f.Add("{root}/usr/bin/xmms/{dep}/{root}/lib/tls/libc-2.3.2.so/CPU_CLK_UNHALTED.100000.0.28082.28089.0")
	f.Add("{root}/usr/bin/xmms/{dep}/{anon:anon}/3189.0xf72aa000.0xf72fa000/cpu-clock.1.0.all.all.3")
	f.Add("{kern}/vmlinux/{dep}/{kern:1}/[kernel.kallsyms]/sched:sched_switch.F1.0.all.all.all")
	f.Add("{root}/usr/bin/xmms/{dep}/{vdso:3}/cpu-clock.1.0.all.all.all")
	f.Add("{root}/a/{dep}/{root}/a/{cg}/{jit:jitlog}/1.0x0.0x10/e.1.0.all.all.all")
	f.Add("{root}/" + strings.Repeat("a", 250) + "%+/b/{dep}/{root}/%/e.1.0.all.all.all")
	f.Fuzz(func(t *testing.T, name string) {
		k, err := Parse(name)
		if err != nil {
			return
		}
		safeComponents(t, name)
		back, err := Name(k)
		if err != nil || back != name {
			t.Fatalf("Name(Parse(%q)) = %q, %v", name, back, err)
		}
	})
}
