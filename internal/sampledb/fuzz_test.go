package sampledb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/golden"
)

// seedFiles are small sample files in the states a reader meets: written
// whole, of each key kind, grown, and as a killed writer leaves them.
// They are FuzzRead's checked-in inputs, and golden files of the format:
// a change to what the writer writes shows up here.
func seedFiles(t testing.TB) map[string][]byte {
	root := openRoot(t, tmpfsDir(t))
	seqs := []Entry{{0x10, 1, 3}, {0x10, 2, 1}, {0x20, 1, 7}, {0xfff, 0, 1}}
	var twenty []Entry
	for i := range uint64(20) {
		twenty = append(twenty, Entry{Key1: i * 4, Count: i + 1})
	}
	seeds := map[string][]byte{
		"offset":     writeEntries(t, root, "offset", testHeader(KeyOffset), []Entry{{0x400, 0, 2}, {0x404, 0, 1}, {0x1234, 0, 9}}),
		"anon-seq":   writeEntries(t, root, "anon", testHeader(KeyAnon), seqs),
		"call-graph": writeEntries(t, root, "cg", testHeader(KeyCallGraph), []Entry{{0x10, 0x400, 2}, {0x18, 0x400, 1}}),
		"grown":      writeEntries(t, root, "grown", testHeader(KeyOffset), twenty),
	}
	c := uint64(minCapacity)
	seeds["unlinked-last"] = corrupt(seeds["anon-seq"], func(b []byte) {
		at := bucketsOff(c) + 4*bucketOf(0xfff, 0, c)
		le.PutUint32(b[at:], le.Uint32(b[nextOff(c)+4*4:]))
	})
	// A writer killed while growing a full table: the file has the
	// bigger size and half-built chains past the old end, the header the
	// old capacity.
	full := writeEntries(t, root, "full", testHeader(KeyOffset), twenty[:c-1])
	grown := make([]byte, fileSize(2*c))
	copy(grown, full)
	for i := range uint64(c) {
		le.PutUint32(grown[bucketsOff(2*c)+4*i:], uint32(i+1))
	}
	seeds["grow-interrupted"] = grown
	return seeds
}

// tmpfsDir is a temporary directory on tmpfs if there is one: every fuzz
// worker writes files when it starts and FuzzRead one per input, and on
// this project's ext4 (mounted with discard, and shared with other jobs)
// creating and removing a file took milliseconds to tens of them.
func tmpfsDir(t testing.TB) string {
	dir := "/dev/shm"
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp(dir, "sampledb-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestFuzzSeeds keeps FuzzRead's checked-in inputs what the writer writes
// (go test -update rewrites them), and checks each reads.
func TestFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzRead")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range seedFiles(t) {
		if _, err := Read(b); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		golden.Check(t, filepath.Join(dir, name), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(b)))))
	}
}

// FuzzRead reads arbitrary bytes as a sample file. Errors wrap ErrFormat;
// never a panic, never a loop. What reads has unique keys that Lookup
// finds, and written again by the writer reads back the same.
func FuzzRead(f *testing.F) {
	for _, b := range seedFiles(f) {
		f.Add(b)
	}
	root := openRoot(f, tmpfsDir(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Read(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("%v does not wrap ErrFormat", err)
			}
			if strings.ContainsRune(err.Error(), 0) {
				t.Fatalf("error quotes a NUL: %q", err)
			}
			return
		}
		entries := readAll(t, r)
		if len(entries) != r.Len() {
			t.Fatalf("%d entries, Len %d", len(entries), r.Len())
		}
		if !slices.Equal(sumEntries(entries), entries) {
			t.Fatalf("a key is there twice")
		}
		for _, e := range entries {
			if n := r.Lookup(e.Key1, e.Key2); n != e.Count {
				t.Fatalf("Lookup(%#x, %#x) = %d, iteration says %d", e.Key1, e.Key2, n, e.Count)
			}
		}
		back := writeEntries(t, root, "f", &r.Header, entries)
		r2, err := Read(back)
		if err != nil {
			t.Fatalf("written back: %v", err)
		}
		if got := readAll(t, r2); !slices.Equal(got, entries) {
			t.Fatalf("written back: %d entries, want %d", len(got), len(entries))
		}
		if !reflect.DeepEqual(r2.Header, r.Header) {
			t.Fatalf("written back: header %+v, want %+v", r2.Header, r.Header)
		}
	})
}
