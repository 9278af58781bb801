package sampledb

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var testEvents = []Event{{Name: "cpu-clock", Count: 999, Freq: true}, {Name: "cycles", Count: 100000}}

func createDB(t testing.TB, dir string, sep Separate) *DB {
	t.Helper()
	db, err := Create(dir, Options{Separate: sep, Events: testEvents, Host: "testhost"})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// readSession reads every selected file: name to key to count.
func readSession(t testing.TB, dir string, args ...string) map[string]map[[2]uint64]uint64 {
	t.Helper()
	spec, err := ParseSpec(args)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := Select(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(sel.Skipped) > 0 {
		t.Fatalf("skipped %q", sel.Skipped)
	}
	out := map[string]map[[2]uint64]uint64{}
	for _, s := range sel.Files {
		r, err := Open(dir, s)
		if err != nil {
			t.Fatal(err)
		}
		m := map[[2]uint64]uint64{}
		for e := range r.Entries() {
			m[[2]uint64{e.Key1, e.Key2}] = e.Count
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		out[s.Session+"/"+s.Name] = m
	}
	return out
}

// TestDBRoundTrip adds samples, flushes, and reads the session back: every
// sample is in the file --separate names, counted once.
func TestDBRoundTrip(t *testing.T) {
	dir := t.TempDir()
	db := createDB(t, dir, SeparateLib|SeparateThread)
	m := must[ImageID](t)
	app := m(db.FileImage(FileIdent{Dev: 1, Ino: 10}, "/usr/bin/app", ImageInfo{BuildID: []byte{1}}))
	libc := m(db.FileImage(FileIdent{Dev: 1, Ino: 11}, "/lib/libc.so.6", ImageInfo{}))
	kern := m(db.KernelImage("vmlinux", ImageInfo{}))
	anon := m(db.AnonImage(42, 0x1000, 0x2000, ""))
	jit := m(db.JITImage("jitlog", 42, 0x7000, 0x8000))
	// The dcookie cache: the identity finds the image, whatever path.
	if id := m(db.FileImage(FileIdent{Dev: 1, Ino: 11}, "/other/name", ImageInfo{})); id != libc {
		t.Errorf("identity seen before gave image %d, want %d", id, libc)
	}
	if id, ok := db.LookupFile(FileIdent{Dev: 1, Ino: 10}); !ok || id != app {
		t.Errorf("LookupFile = %d, %v", id, ok)
	}
	samples := []Sample{
		{App: app, Image: app, TGID: 42, TID: 42, Key1: 0x400},
		{App: app, Image: app, TGID: 42, TID: 42, Key1: 0x400},
		{App: app, Image: libc, TGID: 42, TID: 43, Key1: 0x99},
		{App: app, Image: kern, TGID: 42, TID: 43, Key1: 0xffff},
		{App: app, Image: anon, TGID: 42, TID: 42, Key1: 0x10, Key2: 0},
		{App: app, Image: jit, TGID: 42, TID: 42, Key1: 0x10, Key2: 7},
		{App: app, Image: jit, TGID: 42, TID: 42, Key1: 0x10, Key2: 8},
		{App: app, Image: jit, TGID: 42, TID: 42, Key1: 0x10, Key2: 8, Event: 1},
		{App: app, Image: app, CGTo: libc, TGID: 42, TID: 42, Key1: 0x404, Key2: 0x99},
		{Image: kern, TGID: 2, TID: 2, Key1: 0xffff},
	}
	for i := range samples {
		if err := db.Add(&samples[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	got := readSession(t, dir)
	want := map[string]map[[2]uint64]uint64{
		"current/{root}/usr/bin/app/{dep}/{root}/usr/bin/app/cpu-clock.F999.0.42.42.all":                           {{0x400, 0}: 2},
		"current/{root}/usr/bin/app/{dep}/{root}/lib/libc.so.6/cpu-clock.F999.0.42.43.all":                         {{0x99, 0}: 1},
		"current/{kern}/vmlinux/{dep}/{kern}/vmlinux/cpu-clock.F999.0.42.43.all":                                   {{0xffff, 0}: 1},
		"current/{root}/usr/bin/app/{dep}/{anon:anon}/42.0x1000.0x2000/cpu-clock.F999.0.42.42.all":                 {{0x10, 0}: 1},
		"current/{root}/usr/bin/app/{dep}/{jit:jitlog}/42.0x7000.0x8000/cpu-clock.F999.0.42.42.all":                {{0x10, 7}: 1, {0x10, 8}: 1},
		"current/{root}/usr/bin/app/{dep}/{jit:jitlog}/42.0x7000.0x8000/cycles.100000.0.42.42.all":                 {{0x10, 8}: 1},
		"current/{root}/usr/bin/app/{dep}/{root}/usr/bin/app/{cg}/{root}/lib/libc.so.6/cpu-clock.F999.0.42.42.all": {{0x404, 0x99}: 1},
		"current/{kern}/vmlinux/{dep}/{kern}/vmlinux/cpu-clock.F999.0.2.2.all":                                     {{0xffff, 0}: 1},
	}
	if !maps.EqualFunc(got, want, maps.Equal) {
		t.Errorf("session:\n%s\nwant:\n%s", dump(got), dump(want))
	}
	// The headers say what the names say, and the image's build-id.
	sel, _ := Select(dir, &Spec{Image: []string{"app"}, LibImage: []string{"app"}, Event: []string{"cpu-clock"}})
	if len(sel.Files) != 2 {
		t.Fatalf("selected %d files", len(sel.Files))
	}
	r := must[*Reader](t)(Open(dir, sel.Files[0]))
	if string(r.BuildID) != "\x01" || r.Kind == 0 || !r.Freq || r.Count != 999 {
		t.Errorf("header %+v", r.Header)
	}
	r.Close()
	st := db.Stats()
	if st.Samples != uint64(len(samples)) || st.Flushed != st.Samples || st.Dirty != 0 || st.Open != 8 {
		t.Errorf("stats %+v", st)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	meta := must[Meta](t)(ReadMeta(dir, Current))
	if meta.Host != "testhost" || meta.Separate != "lib,thread" || len(meta.Runs) != 1 || meta.Runs[0].Stop.IsZero() || len(meta.Events) != 2 {
		t.Errorf("meta %+v", meta)
	}
}

func dump(m map[string]map[[2]uint64]uint64) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "  %s %v\n", k, m[k])
	}
	return b.String()
}

// TestSeparate checks which files each --separate setting makes, as
// opd_sfile.c decides.
func TestSeparate(t *testing.T) {
	for _, tc := range []struct {
		sep  Separate
		want []string
	}{
		{SeparateNone, []string{
			"{kern}/vmlinux/{dep}/{kern}/vmlinux/cpu-clock.F999.0.all.all.all",
			"{root}/bin/sh/{dep}/{anon:[heap]}/7.0x10.0x20/cpu-clock.F999.0.all.all.all",
			"{root}/bin/sh/{dep}/{root}/bin/sh/cpu-clock.F999.0.all.all.all",
			"{root}/lib/libc/{dep}/{root}/lib/libc/cpu-clock.F999.0.all.all.all",
		}},
		{SeparateLib, []string{
			"{kern}/vmlinux/{dep}/{kern}/vmlinux/cpu-clock.F999.0.all.all.all",
			"{root}/bin/sh/{dep}/{anon:[heap]}/7.0x10.0x20/cpu-clock.F999.0.all.all.all",
			"{root}/bin/sh/{dep}/{root}/bin/sh/cpu-clock.F999.0.all.all.all",
			"{root}/bin/sh/{dep}/{root}/lib/libc/cpu-clock.F999.0.all.all.all",
		}},
		{SeparateKernel, []string{
			"{root}/bin/sh/{dep}/{anon:[heap]}/7.0x10.0x20/cpu-clock.F999.0.all.all.all",
			"{root}/bin/sh/{dep}/{kern}/vmlinux/cpu-clock.F999.0.all.all.all",
			"{root}/bin/sh/{dep}/{root}/bin/sh/cpu-clock.F999.0.all.all.all",
			"{root}/bin/sh/{dep}/{root}/lib/libc/cpu-clock.F999.0.all.all.all",
		}},
		{SeparateThread | SeparateCPU, []string{
			"{kern}/vmlinux/{dep}/{kern}/vmlinux/cpu-clock.F999.0.7.8.1",
			"{root}/bin/sh/{dep}/{anon:[heap]}/7.0x10.0x20/cpu-clock.F999.0.7.8.1",
			"{root}/bin/sh/{dep}/{root}/bin/sh/cpu-clock.F999.0.7.8.1",
			"{root}/lib/libc/{dep}/{root}/lib/libc/cpu-clock.F999.0.7.8.1",
		}},
	} {
		dir := t.TempDir()
		db := createDB(t, dir, tc.sep)
		m := must[ImageID](t)
		sh := m(db.FileImage(FileIdent{}, "/bin/sh", ImageInfo{}))
		for _, im := range []ImageID{sh, m(db.FileImage(FileIdent{}, "/lib/libc", ImageInfo{})),
			m(db.KernelImage("vmlinux", ImageInfo{})), m(db.AnonImage(7, 0x10, 0x20, "[heap]"))} {
			if err := db.Add(&Sample{App: sh, Image: im, TGID: 7, TID: 8, CPU: 1, Key1: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		var got []string
		for name := range readSession(t, dir) {
			got = append(got, strings.TrimPrefix(name, "current/"))
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("--separate=%s:\n got %q\nwant %q", tc.sep, got, tc.want)
		}
	}
}

func TestParseSeparate(t *testing.T) {
	for in, want := range map[string]Separate{
		"": SeparateNone, "none": SeparateNone, "lib": SeparateLib, "kernel": SeparateLib | SeparateKernel,
		"thread,cpu": SeparateThread | SeparateCPU, "all": SeparateAll, "lib,kernel,thread,cpu": SeparateAll,
	} {
		got, err := ParseSeparate(in)
		if err != nil || got != want {
			t.Errorf("ParseSeparate(%q) = %v, %v; want %v", in, got, err, want)
		}
		if back, _ := ParseSeparate(got.String()); back != got {
			t.Errorf("%q: String %q parses to %v", in, got.String(), back)
		}
	}
	if _, err := ParseSeparate("threads"); err == nil {
		t.Error("ParseSeparate(threads) did not fail")
	}
}

func TestAddRefuses(t *testing.T) {
	db := createDB(t, t.TempDir(), SeparateNone)
	defer db.Close()
	f := must[ImageID](t)(db.FileImage(FileIdent{}, "/a", ImageInfo{}))
	anon := must[ImageID](t)(db.AnonImage(5, 0, 0x1000, "x"))
	for _, tc := range []struct {
		s    Sample
		want error
	}{
		{Sample{Image: 0}, ErrUnknownImage},
		{Sample{Image: 99}, ErrUnknownImage},
		{Sample{Image: f, App: 99}, nil}, // --separate=none ignores the app
		{Sample{Image: f, Event: 2}, ErrUnknownEvent},
		{Sample{Image: f, Key2: 1}, ErrSecondKey},
		{Sample{Image: anon, Key2: 1}, nil},
		{Sample{Image: f, CGTo: 77}, ErrUnknownImage},
	} {
		if err := db.Add(&tc.s); err != tc.want {
			t.Errorf("Add(%+v) = %v, want %v", tc.s, err, tc.want)
		}
	}
	// A forgotten process's images are refused from then on.
	db.ForgetProcess(5)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.evictAll(t)
	if err := db.Add(&Sample{Image: anon}); err != ErrUnknownImage {
		t.Errorf("Add after ForgetProcess = %v", err)
	}
	again := must[ImageID](t)(db.AnonImage(5, 0, 0x1000, "x"))
	if again == anon {
		t.Errorf("a forgotten image's ID came back")
	}
}

// evictAll closes every flushed file, as a flush over MaxOpen would.
func (db *DB) evictAll(t testing.TB) {
	for _, sf := range db.files.all() {
		if sf.dirty {
			t.Fatal("evictAll: a file is dirty")
		}
		db.remove(sf)
	}
}

// TestMaxOpen: with more files than MaxOpen, a flush closes the least
// recently used, and their counts come back when they are used again.
func TestMaxOpen(t *testing.T) {
	dir := t.TempDir()
	db, err := Create(dir, Options{Separate: SeparateThread, Events: testEvents, MaxOpen: 8})
	if err != nil {
		t.Fatal(err)
	}
	f := must[ImageID](t)(db.FileImage(FileIdent{}, "/a", ImageInfo{}))
	for round := range 3 {
		for tid := range uint32(20) {
			for range tid + 1 {
				if err := db.Add(&Sample{Image: f, TGID: 1, TID: tid, Key1: uint64(round)}); err != nil {
					t.Fatal(err)
				}
			}
			if tid%5 == 4 {
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
				if st := db.Stats(); st.Open > 8 || st.Files > 8 {
					t.Fatalf("round %d tid %d: %d open, %d files", round, tid, st.Open, st.Files)
				}
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	got := readSession(t, dir)
	if len(got) != 20 {
		t.Fatalf("%d files, want 20", len(got))
	}
	for tid := range uint64(20) {
		m := got[fmt.Sprintf("current/{root}/a/{dep}/{root}/a/cpu-clock.F999.0.1.%d.all", tid)]
		for round := range uint64(3) {
			if m[[2]uint64{round, 0}] != tid+1 {
				t.Fatalf("tid %d round %d: %v", tid, round, m)
			}
		}
	}
}

// TestVariants: one path, two binaries (another build-id, or across a
// restart the file's header says another): each gets its own file.
func TestVariants(t *testing.T) {
	dir := t.TempDir()
	db := createDB(t, dir, SeparateNone)
	m := must[ImageID](t)
	v1 := m(db.FileImage(FileIdent{Ino: 1}, "/bin/x", ImageInfo{BuildID: []byte{1}}))
	v2 := m(db.FileImage(FileIdent{Ino: 2}, "/bin/x", ImageInfo{BuildID: []byte{2}}))
	unknown := m(db.FileImage(FileIdent{Ino: 3}, "/bin/x", ImageInfo{}))
	if v1 == v2 || unknown != v1 {
		t.Fatalf("images %d %d %d", v1, v2, unknown)
	}
	db.Add(&Sample{Image: v1, Key1: 1})
	db.Add(&Sample{Image: v2, Key1: 2})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// A new daemon sees build-id 2 first: it finds it in variant 1.
	db = createDB(t, dir, SeparateNone)
	v2 = m(db.FileImage(FileIdent{Ino: 2}, "/bin/x", ImageInfo{BuildID: []byte{2}}))
	v3 := m(db.FileImage(FileIdent{Ino: 4}, "/bin/x", ImageInfo{BuildID: []byte{3}}))
	db.Add(&Sample{Image: v2, Key1: 2})
	db.Add(&Sample{Image: v3, Key1: 3})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[[2]uint64]uint64{
		"current/{root}/bin/x/{dep}/{root}/bin/x/cpu-clock.F999.0.all.all.all":   {{1, 0}: 1},
		"current/{root}/bin/x/{dep}/{root:1}/bin/x/cpu-clock.F999.0.all.all.all": {{2, 0}: 2},
		"current/{root}/bin/x/{dep}/{root:2}/bin/x/cpu-clock.F999.0.all.all.all": {{3, 0}: 1},
	}
	if got := readSession(t, dir); !maps.EqualFunc(got, want, maps.Equal) {
		t.Errorf("session:\n%s\nwant:\n%s", dump(got), dump(want))
	}
}

func TestSaveReset(t *testing.T) {
	dir := t.TempDir()
	db := createDB(t, dir, SeparateNone)
	f := must[ImageID](t)(db.FileImage(FileIdent{}, "/a", ImageInfo{}))
	db.Add(&Sample{Image: f, Key1: 1})
	if err := db.Save("first"); err != nil {
		t.Fatal(err)
	}
	if err := db.Save("first"); err == nil {
		t.Error("saving over a saved session did not fail")
	}
	db.Add(&Sample{Image: f, Key1: 2})
	db.AddLost(0, 3)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Save("second"); err != nil {
		t.Fatal(err)
	}
	db.Add(&Sample{Image: f, Key1: 3})
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Reset(); err != nil {
		t.Fatal(err)
	}
	db.Add(&Sample{Image: f, Key1: 4})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := must[[]string](t)(Sessions(dir)); !slices.Equal(got, []string{"current", "first", "second"}) {
		t.Errorf("sessions %q", got)
	}
	const name = "/{root}/a/{dep}/{root}/a/cpu-clock.F999.0.all.all.all"
	got := readSession(t, dir, "session:current,first,second", "session-exclude:second")
	want := map[string]map[[2]uint64]uint64{"current" + name: {{4, 0}: 1}, "first" + name: {{1, 0}: 1}}
	if !maps.EqualFunc(got, want, maps.Equal) {
		t.Errorf("sessions:\n%s\nwant:\n%s", dump(got), dump(want))
	}
	if m := must[Meta](t)(ReadMeta(dir, "second")); m.Events[0].Lost != 3 || len(m.Runs) != 1 || m.Runs[0].Stop.IsZero() {
		t.Errorf("second's meta %+v", m)
	}
	if m := must[Meta](t)(ReadMeta(dir, Current)); m.Events[0].Lost != 0 {
		t.Errorf("the next session inherited lost samples: %+v", m)
	}
	// Without a daemon.
	if err := Save(dir, "third"); err != nil {
		t.Fatal(err)
	}
	if err := Reset(dir); err != nil {
		t.Fatal(err)
	}
	if got := must[[]string](t)(Sessions(dir)); !slices.Equal(got, []string{"first", "second", "third"}) {
		t.Errorf("sessions %q", got)
	}
	for _, bad := range []string{"", "current", ".x", "a/b", "\x00"} {
		if err := Save(dir, bad); err == nil {
			t.Errorf("Save(%q) did not fail", bad)
		}
	}
}

func TestMismatch(t *testing.T) {
	dir := t.TempDir()
	createDB(t, dir, SeparateLib).Close()
	if _, err := Create(dir, Options{Separate: SeparateNone, Events: testEvents}); !errors.Is(err, ErrMismatch) {
		t.Errorf("other --separate: %v", err)
	}
	if _, err := Create(dir, Options{Separate: SeparateLib, Events: testEvents[:1]}); !errors.Is(err, ErrMismatch) {
		t.Errorf("other events: %v", err)
	}
	db := createDB(t, dir, SeparateLib)
	db.Close()
	if m := must[Meta](t)(ReadMeta(dir, Current)); len(m.Runs) != 2 {
		t.Errorf("%d runs, want 2", len(m.Runs))
	}
}

// TestDamaged: a sample file that does not read is put aside (hidden,
// kept for a look) and counting starts again.
func TestDamaged(t *testing.T) {
	dir := t.TempDir()
	db := createDB(t, dir, SeparateNone)
	f := must[ImageID](t)(db.FileImage(FileIdent{}, "/a", ImageInfo{}))
	db.Add(&Sample{Image: f, Key1: 1})
	db.Close()
	name := filepath.Join(dir, "samples/current/{root}/a/{dep}/{root}/a/cpu-clock.F999.0.all.all.all")
	if err := os.WriteFile(name, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	db = createDB(t, dir, SeparateNone)
	f = must[ImageID](t)(db.FileImage(FileIdent{}, "/a", ImageInfo{}))
	db.Add(&Sample{Image: f, Key1: 2})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	got := readSession(t, dir)
	if len(got) != 1 || got["current/{root}/a/{dep}/{root}/a/cpu-clock.F999.0.all.all.all"][[2]uint64{2, 0}] != 1 {
		t.Errorf("session %v", got)
	}
	ents, _ := os.ReadDir(filepath.Dir(name))
	if len(ents) != 2 || !strings.HasPrefix(ents[0].Name(), ".damaged-") {
		t.Errorf("directory holds %v", ents)
	}
}

// TestJITRoot: the directory of a process's JIT data is made where
// JITDir says, and files made through its root land there; one planted
// as a symlink is refused, not followed.
func TestJITRoot(t *testing.T) {
	dir := t.TempDir()
	db := createDB(t, dir, SeparateNone)
	defer db.Close()
	r, err := db.JITRoot(1234)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile("x", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := os.Stat(filepath.Join(JITDir(dir, Current, 1234), "x")); err != nil {
		t.Errorf("the file made through JITRoot is not in JITDir: %v", err)
	}
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, JITDir(dir, Current, 99)); err != nil {
		t.Fatal(err)
	}
	if r, err := db.JITRoot(99); err == nil {
		r.Close()
		t.Error("JITRoot followed a symlink planted as the process's directory")
	}
}

// TestReadJIT: a file of a process's JIT directory reads back whole; a
// missing one is fs.ErrNotExist, one past the limit an error, and a
// symlink planted in its place is refused, not followed.
func TestReadJIT(t *testing.T) {
	dir := t.TempDir()
	db := createDB(t, dir, SeparateNone)
	defer db.Close()
	r, err := db.JITRoot(1234)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.WriteFile("dump", []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := db.ReadJIT(1234, "dump", 10); err != nil || string(b) != "0123456789" {
		t.Errorf("ReadJIT = %q, %v; want the 10 bytes written", b, err)
	}
	if _, err := db.ReadJIT(1234, "dump", 9); err == nil {
		t.Error("ReadJIT read 10 bytes under a limit of 9")
	}
	if _, err := db.ReadJIT(1234, "none", 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadJIT of a missing file: %v, want fs.ErrNotExist", err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("secret"), 0o600)
	if err := os.Symlink(secret, filepath.Join(JITDir(dir, Current, 1234), "link")); err != nil {
		t.Fatal(err)
	}
	if b, err := db.ReadJIT(1234, "link", 10); err == nil {
		t.Errorf("ReadJIT followed a symlink: %q", b)
	}
}

// TestLongPath: an image path longer than PATH_MAX, mangled three times
// over, is created and read through directory handles.
func TestLongPath(t *testing.T) {
	dir := t.TempDir()
	db := createDB(t, dir, SeparateLib)
	long := "/" + strings.Repeat("\xff\x00/", 1500) + "x"
	f := must[ImageID](t)(db.FileImage(FileIdent{}, long, ImageInfo{}))
	db.Add(&Sample{App: f, Image: f, Key1: 1})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	got := readSession(t, dir)
	if len(got) != 1 {
		t.Fatalf("%d files", len(got))
	}
	for name := range got {
		if len(name) < 4096 {
			t.Errorf("name of %d bytes, want > PATH_MAX", len(name))
		}
		k, err := Parse(strings.TrimPrefix(name, "current/"))
		if err != nil || k.Dep.Name != long {
			t.Errorf("parsed back %v", err)
		}
	}
}
