package sampledb

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want Spec
	}{
		{nil, Spec{}},
		{[]string{"session:first,current", "session-exclude:old"}, Spec{Sessions: []string{"first", "current"}, SessionExclude: []string{"old"}}},
		{[]string{"image:/bin/a,*b*", "lib-image:libc*", "image-exclude:/bin/c", "lib-image-exclude:x"},
			Spec{Image: []string{"/bin/a", "*b*"}, LibImage: []string{"libc*"}, ImageExclude: []string{"/bin/c"}, LibImageExclude: []string{"x"}}},
		{[]string{`./test/test_sym53c8xx\,9xx`, "/usr/bin/x"}, Spec{ImageOrLib: []string{`./test/test_sym53c8xx\,9xx`, "/usr/bin/x"}}},
		{[]string{`image:a\,b,c`}, Spec{Image: []string{"a,b", "c"}}},
		{[]string{"event:cpu-clock,cycles", "count:F999,100000", "unit-mask:0x3,1"},
			Spec{Event: []string{"cpu-clock", "cycles"}, Count: []string{"F999", "100000"}, UnitMask: []uint64{3, 1}}},
		{[]string{"tid:1,2", "tgid:3", "cpu:all"}, Spec{TID: []uint32{1, 2}, TGID: []uint32{3}}},
		{[]string{"weird:tag"}, Spec{ImageOrLib: []string{"weird:tag"}}}, // an image name with a colon
	} {
		got, err := ParseSpec(tc.args)
		if err != nil {
			t.Fatalf("ParseSpec(%q): %v", tc.args, err)
		}
		if !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("ParseSpec(%q)\n got %+v\nwant %+v", tc.args, *got, tc.want)
		}
	}
	for _, args := range [][]string{
		{"image:a", "image:b"}, {"image:"}, {"tid:x"}, {"tid:4294967295"}, {"cpu:-1"}, {"unit-mask:z"},
		{"session:../x"}, {"session:.hidden"}, {""},
	} {
		if s, err := ParseSpec(args); err == nil {
			t.Errorf("ParseSpec(%q) = %+v, want an error", args, s)
		}
	}
}

func TestSpecMatch(t *testing.T) {
	app, libc := fileImage("/usr/bin/app"), fileImage("/lib/x86_64-linux-gnu/libc.so.6")
	kern := Image{Kind: ImageKernel, Name: "vmlinux"}
	anon := Image{Kind: ImageAnon, Name: "anon", TGID: 7, Start: 0x1000, End: 0x2000}
	jit := Image{Kind: ImageJIT, Name: "jitlog", TGID: 7, Start: 0x1000, End: 0x2000}
	key := func(a, d Image, tid, cpu uint32) FileKey {
		return FileKey{App: a, Dep: d, Event: "cpu-clock", Count: 999, Freq: true, TGID: tid, TID: tid, CPU: cpu}
	}
	files := map[string]FileKey{
		"app":      key(app, app, 7, All),
		"app-libc": key(app, libc, 7, All),
		"libc":     key(libc, libc, All, 1),
		"kern":     key(kern, kern, All, All),
		"anon":     key(app, anon, 7, All),
		"jit":      key(app, jit, 7, All),
		"cycles":   {App: app, Dep: app, Event: "cycles", Count: 100000, UnitMask: 2, TGID: All, TID: All, CPU: All},
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "anon app app-libc cycles jit kern libc"},
		{[]string{"image:/usr/bin/app"}, "anon app app-libc cycles jit"},
		{[]string{"image:app"}, "anon app app-libc cycles jit"}, // base name
		{[]string{"image:/usr/*"}, "anon app app-libc cycles jit"},
		{[]string{"image:*/app"}, "anon app app-libc cycles jit"},
		{[]string{"image:app", "lib-image:libc*"}, "app-libc"},
		{[]string{"lib-image:libc.so.6"}, "app-libc libc"},
		{[]string{"libc.so.6"}, "app-libc libc"}, // a bare word: app or lib
		{[]string{"vmlinux", "image:/usr/bin/app", "lib-image:/usr/bin/app"}, "app cycles kern"},
		{[]string{"image-exclude:libc*"}, "anon app cycles jit kern"},
		{[]string{"lib-image-exclude:anon*,jit:*"}, "app app-libc cycles kern libc"},
		{[]string{"lib-image:anon (tgid:7 *"}, "anon"},
		{[]string{"lib-image:jit:jitlog*"}, "jit"},
		{[]string{"event:cyc*"}, "cycles"},
		{[]string{"count:F999"}, "anon app app-libc jit kern libc"},
		{[]string{"unit-mask:2"}, "cycles"},
		{[]string{"tgid:7"}, "anon app app-libc jit"},
		{[]string{"tid:8"}, ""},
		{[]string{"cpu:1,2"}, "libc"},
		{[]string{"cpu:all"}, "anon app app-libc cycles jit kern libc"},
	} {
		spec, err := ParseSpec(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, name := range []string{"anon", "app", "app-libc", "cycles", "jit", "kern", "libc"} {
			if spec.Match(files[name]) {
				got = append(got, name)
			}
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%q selects %q, want %q", tc.args, g, tc.want)
		}
	}
}

func TestSessionNames(t *testing.T) {
	avail := []string{"current", "a", "b"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"current"}},
		{[]string{"session:b,a,b,zz"}, []string{"b", "a"}},
		{[]string{"session:current,a", "session-exclude:current"}, []string{"a"}},
	} {
		spec, _ := ParseSpec(tc.args)
		if got := spec.SessionNames(avail); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pat, name string
		want      bool
	}{
		{"", "", true}, {"", "a", false}, {"*", "", true}, {"*", "/a/b", true},
		{"a*b", "ab", true}, {"a*b", "axxb", true}, {"a*b", "axxbc", false}, {"a*b*c", "abxbxc", true},
		{"?", "a", true}, {"?", "", false}, {"a?c", "abc", true},
		{"[abc]", "b", true}, {"[!abc]", "b", false}, {"[^abc]", "d", true}, {"[a-c]x", "bx", true},
		{"[]]", "]", true}, {"[!]]", "a", true}, {"[a-]", "-", true}, {"[", "[", true}, {"[a", "[a", true},
		{`\*`, "*", true}, {`\*`, "a", false}, {`a\`, `a\`, true}, {`[\]]`, "]", true},
		{"*/libc*", "/lib/libc.so.6", true}, {"libc*", "/lib/libc.so.6", false},
		{strings.Repeat("*a", 30) + "b", strings.Repeat("a", 100), false},
	} {
		if got := glob(tc.pat, tc.name); got != tc.want {
			t.Errorf("glob(%q, %q) = %v, want %v", tc.pat, tc.name, got, tc.want)
		}
	}
}

// FuzzParseSpec parses arbitrary specifications and matches them against
// a few files: no panic, errors or a Spec; and a glob that is a name
// (no special bytes) matches exactly that name.
func FuzzParseSpec(f *testing.F) {
	f.Add("image:/bin/a,*b*", "lib-image:[a-c]?", "tid:1,2")
	f.Add(`a\,b`, "session-exclude:x", "count:F1")
	f.Add("event:cpu*", "unit-mask:0x10", "cpu:all")
	keys := []FileKey{
		{App: fileImage("/bin/a"), Dep: fileImage("/lib/b"), Event: "cpu-clock", Count: 1, TGID: 1, TID: 2, CPU: All},
		{App: Image{Kind: ImageKernel, Name: "vmlinux"}, Dep: Image{Kind: ImageJIT, Name: "jitlog", TGID: 3, End: 9}, Event: "c", TGID: All, TID: All, CPU: 0},
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		spec, err := ParseSpec([]string{a, b, c})
		if err != nil {
			return
		}
		for _, k := range keys {
			spec.Match(k)
		}
		spec.SessionNames([]string{"current", "x"})
		if !strings.ContainsAny(a, `*?[\`) && a != "" {
			if !glob(a, a) || glob(a, a+"x") {
				t.Fatalf("glob(%q) does not match exactly itself", a)
			}
		}
	})
}
