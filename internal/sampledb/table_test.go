package sampledb

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func testHeader(kind KeyKind) *Header {
	h := &Header{
		Version: version, Kind: kind, Event: "cpu-clock", Count: 4000, UnitMask: 0,
		BuildID: []byte{0xde, 0xad, 0xbe, 0xef}, Mtime: time.Unix(1700000000, 5), Created: time.Unix(1800000000, 0),
	}
	if kind == KeyAnon {
		h.AnonStart, h.AnonEnd = 0x7f0000000000, 0x7f0000100000
	}
	return h
}

func openRoot(t testing.TB, dir string) *os.Root {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

// writeEntries writes entries to a new file and returns its bytes.
func writeEntries(t testing.TB, root *os.Root, name string, h *Header, entries []Entry) []byte {
	t.Helper()
	w, err := createFile(root, name, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if i := w.find(e.Key1, e.Key2); i != 0 {
			w.add(i, e.Count)
		} else if _, err := w.insert(e.Key1, e.Key2, e.Count); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	b, err := root.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readAll(t testing.TB, r *Reader) []Entry {
	t.Helper()
	var out []Entry
	for e := range r.Entries() {
		out = append(out, e)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sumEntries merges entries of equal keys, in first-seen order.
func sumEntries(in []Entry) []Entry {
	var out []Entry
	at := map[[2]uint64]int{}
	for _, e := range in {
		k := [2]uint64{e.Key1, e.Key2}
		if i, ok := at[k]; ok {
			out[i].Count += e.Count
			continue
		}
		at[k] = len(out)
		out = append(out, e)
	}
	return out
}

func TestWriterRoundTrip(t *testing.T) {
	root := openRoot(t, t.TempDir())
	rng := rand.New(rand.NewPCG(1, 2))
	for _, kind := range []KeyKind{KeyOffset, KeyAnon, KeyCallGraph} {
		for _, n := range []int{0, 1, 63, 64, 1000, 20000} {
			var in []Entry
			for range n {
				e := Entry{Key1: rng.Uint64N(uint64(n)/2 + 1), Count: 1 + rng.Uint64N(5)}
				if kind != KeyOffset {
					e.Key2 = rng.Uint64N(3)
				}
				in = append(in, e)
			}
			h := testHeader(kind)
			name := filepath.Join(kind.String(), "f"+strings.Repeat("x", n%7))
			b := writeEntries(t, root, name, h, in)
			want := sumEntries(in)
			r, err := Read(b)
			if err != nil {
				t.Fatalf("%s %d: %v", kind, n, err)
			}
			if got := readAll(t, r); !slices.Equal(got, want) {
				t.Fatalf("%s %d: read back %d entries, want %d", kind, n, len(got), len(want))
			}
			if r.Len() != len(want) {
				t.Errorf("Len %d, want %d", r.Len(), len(want))
			}
			for _, e := range want {
				if c := r.Lookup(e.Key1, e.Key2); c != e.Count {
					t.Fatalf("Lookup(%d, %d) = %d, want %d", e.Key1, e.Key2, c, e.Count)
				}
			}
			if c := r.Lookup(1<<63, 7); c != 0 {
				t.Errorf("Lookup of a missing key = %d", c)
			}
			h.Version = version
			if !reflect.DeepEqual(r.Header, *h) {
				t.Errorf("header %+v, want %+v", r.Header, *h)
			}
			// Mapped, the same.
			m, err := OpenFile(filepath.Join(root.Name(), name))
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, m); !slices.Equal(got, want) {
				t.Fatalf("mapped: read back %d entries, want %d", len(got), len(want))
			}
			m.Close()
			// The size is what the capacity needs: it doubles from 64.
			capacity := uint64(minCapacity)
			for capacity < uint64(len(want))+1 {
				capacity *= 2
			}
			if int64(len(b)) != fileSize(capacity) {
				t.Errorf("%d keys: %d bytes, want %d", len(want), len(b), fileSize(capacity))
			}
		}
	}
}

// TestReopenAppends writes, closes, reopens for writing and writes more:
// the counts add up, and the file's keys keep their nodes.
func TestReopenAppends(t *testing.T) {
	root := openRoot(t, t.TempDir())
	first := []Entry{{1, 0, 5}, {2, 0, 1}}
	writeEntries(t, root, "a/f", testHeader(KeyOffset), first)
	w, _, err := openFile(root, "a/f")
	if err != nil {
		t.Fatal(err)
	}
	for k := uint64(1); k <= 100; k++ {
		if i := w.find(k, 0); i != 0 {
			w.add(i, 10)
		} else if _, err := w.insert(k, 0, 10); err != nil {
			t.Fatal(err)
		}
	}
	w.close()
	b, _ := root.ReadFile("a/f")
	r, err := Read(b)
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Lookup(1, 0); c != 15 {
		t.Errorf("key 1: %d, want 15", c)
	}
	if c := r.Lookup(100, 0); c != 10 {
		t.Errorf("key 100: %d, want 10", c)
	}
	if r.Len() != 100 {
		t.Errorf("%d keys, want 100", r.Len())
	}
}

// corrupt returns b with a change made by f.
func corrupt(b []byte, f func(b []byte)) []byte {
	c := bytes.Clone(b)
	f(c)
	return c
}

func TestReadRefuses(t *testing.T) {
	root := openRoot(t, t.TempDir())
	good := writeEntries(t, root, "f", testHeader(KeyOffset), []Entry{{1, 0, 1}, {2, 0, 2}, {3, 0, 3}, {65, 0, 4}})
	if _, err := Read(good); err != nil {
		t.Fatal(err)
	}
	c := uint64(minCapacity)
	bo, no := bucketsOff(c), nextOff(c)
	b1 := bucketOf(1, 0, c)
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "shorter than"},
		{"magic", corrupt(good, func(b []byte) { b[0] = 'X' }), "offset 0: not a sample file"},
		{"version", corrupt(good, func(b []byte) { le.PutUint32(b[offVersion:], 2) }), "version 2"},
		{"header size", corrupt(good, func(b []byte) { le.PutUint32(b[offHeaderSize:], 4096) }), "header size"},
		{"kind", corrupt(good, func(b []byte) { le.PutUint32(b[offKind:], 9) }), "key kind"},
		{"flags", corrupt(good, func(b []byte) { le.PutUint32(b[offFlags:], 0x80) }), "unknown flags"},
		{"anon range", corrupt(good, func(b []byte) { le.PutUint64(b[offAnonStart:], 5) }), "anonymous range"},
		{"build-id", corrupt(good, func(b []byte) { b[offBuildIDLen] = 65 }), "build-id length"},
		{"event", corrupt(good, func(b []byte) { le.PutUint16(b[offEventLen:], 0) }), "event name length"},
		{"capacity odd", corrupt(good, func(b []byte) { le.PutUint64(b[offCapacity:], 65) }), "capacity 65"},
		{"capacity big", corrupt(good, func(b []byte) { le.PutUint64(b[offCapacity:], 1<<20) }), "needs"},
		{"truncated", good[:len(good)-1], "needs"},
		{"used 0", corrupt(good, func(b []byte) { le.PutUint64(b[offUsed:], 0) }), "0 nodes used"},
		{"used past capacity", corrupt(good, func(b []byte) { le.PutUint64(b[offUsed:], c+1) }), "nodes used"},
		{"count 0", corrupt(good, func(b []byte) { le.PutUint64(b[headerSize+2*nodeSize+16:], 0) }), "count of 0"},
		{"second key", corrupt(good, func(b []byte) { le.PutUint64(b[headerSize+nodeSize+8:], 1) }), "second key"},
		{"cycle", corrupt(good, func(b []byte) { le.PutUint32(b[no+4*2:], 3) }), "not an older one"},
		{"self loop", corrupt(good, func(b []byte) { le.PutUint32(b[no+4*2:], 2) }), "not an older one"},
		{"bucket past used", corrupt(good, func(b []byte) { le.PutUint32(b[bo+4*b1:], 9) }), "past the 5 used"},
		{"wrong chain", corrupt(good, func(b []byte) {
			le.PutUint64(b[headerSize+nodeSize:], 77) // key 1 becomes 77: not its chain
		}), "its key's chain"},
		{"unlinked", corrupt(good, func(b []byte) {
			le.PutUint32(b[bo+4*b1:], 0)
		}), "in no chain"},
		{"duplicate", corrupt(good, func(b []byte) {
			le.PutUint64(b[headerSize+2*nodeSize:], 1) // key 2 becomes key 1 ...
			le.PutUint32(b[bo+4*bucketOf(2, 0, c):], 0)
			le.PutUint32(b[no+4*2:], le.Uint32(b[bo+4*b1:]))
			le.PutUint32(b[bo+4*b1:], 2) // ... and joins key 1's chain
			le.PutUint32(b[no+4*3:], 0)
			le.PutUint32(b[no+4*4:], 0)
		}), "twice"},
	} {
		r, err := Read(tc.b)
		if err == nil {
			t.Errorf("%s: read %d entries, want an error", tc.name, r.Len())
			continue
		}
		if !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v does not wrap ErrFormat", tc.name, err)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q in it", tc.name, err, tc.want)
		}
	}
}

// TestUnlinkedLast: a writer stopped between publishing its last node and
// linking it leaves a file that reads, with that node; the next writer
// links it.
func TestUnlinkedLast(t *testing.T) {
	root := openRoot(t, t.TempDir())
	good := writeEntries(t, root, "f", testHeader(KeyOffset), []Entry{{1, 0, 1}, {2, 0, 2}, {3, 0, 3}})
	c := uint64(minCapacity)
	b := corrupt(good, func(b []byte) {
		at := bucketsOff(c) + 4*bucketOf(3, 0, c)
		le.PutUint32(b[at:], le.Uint32(b[nextOff(c)+4*3:]))
	})
	r, err := Read(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, r); !slices.Equal(got, []Entry{{1, 0, 1}, {2, 0, 2}, {3, 0, 3}}) {
		t.Fatalf("read %v", got)
	}
	if err := root.WriteFile("g", b, 0o600); err != nil {
		t.Fatal(err)
	}
	w, _, err := openFile(root, "g")
	if err != nil {
		t.Fatal(err)
	}
	if i := w.find(3, 0); i != 3 {
		t.Fatalf("key 3 at node %d after reopening, want 3", i)
	}
	w.close()
}

// TestLiveReader reads a file while its writer inserts and grows it: every
// open checks the whole file and succeeds (mapping it again when it grew
// meanwhile), and what it sees never shrinks.
func TestLiveReader(t *testing.T) {
	root := openRoot(t, t.TempDir())
	w, err := createFile(root, "f", testHeader(KeyAnon))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		defer w.close()
		for k := range uint64(30000) {
			if _, err := w.insert(k, k%5, 1); err != nil {
				done <- err
				return
			}
			if i := w.find(k/2, (k/2)%5); i != 0 {
				w.add(i, 1)
			}
		}
		done <- nil
	}()
	path := filepath.Join(root.Name(), "f")
	var keys int
	var total uint64
	for reads := 0; ; reads++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d reads while writing, the last saw %d keys", reads, keys)
			return
		default:
		}
		r, err := OpenFile(path)
		if err != nil {
			t.Fatalf("read %d: %v", reads, err)
		}
		var n uint64
		for e := range r.Entries() {
			n += e.Count
		}
		if r.Len() < keys || n < total {
			t.Fatalf("read %d: %d keys counting %d, after %d counting %d", reads, r.Len(), n, keys, total)
		}
		keys, total = r.Len(), n
		r.Close()
	}
}
