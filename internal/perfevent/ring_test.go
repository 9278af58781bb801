package perfevent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// record builds a record of the given type and total size whose body bytes
// are all fill.
func record(typ uint32, size int, fill byte) []byte {
	r := bytes.Repeat([]byte{fill}, max(size, headerSize))
	binary.NativeEndian.PutUint32(r, typ)
	binary.NativeEndian.PutUint16(r[4:], 0)
	binary.NativeEndian.PutUint16(r[6:], uint16(size))
	return r
}

// put writes recs into a ring of the given size as the kernel would,
// starting at the free-running position tail, and returns the head.
func put(data []byte, tail uint64, recs ...[]byte) uint64 {
	mask := uint64(len(data) - 1)
	for _, r := range recs {
		for _, b := range r {
			data[tail&mask] = b
			tail++
		}
	}
	return tail
}

func TestRingRead(t *testing.T) {
	lost := record(unix.PERF_RECORD_LOST, 24, 0)
	binary.NativeEndian.PutUint64(lost[16:], 7)
	tests := []struct {
		name     string
		size     int
		tail     uint64
		recs     [][]byte
		wantLost uint64
	}{
		{"empty", 64, 0, nil, 0},
		{"one", 64, 0, [][]byte{record(9, 16, 1)}, 0},
		{"exact fit", 64, 0, [][]byte{record(9, 64, 2)}, 0},
		{"exact fit after wrap", 64, 40, [][]byte{record(9, 64, 3)}, 0},
		{"ends at ring end", 64, 48, [][]byte{record(9, 16, 4), record(3, 8, 5)}, 0},
		{"wraps mid body", 64, 48, [][]byte{record(9, 32, 6)}, 0},
		{"wraps mid header", 64, 60, [][]byte{record(9, 24, 7)}, 0},
		{"counter past 2^32", 64, 1<<32 + 56, [][]byte{record(9, 24, 8), record(10, 40, 9)}, 0},
		{"many", 4096, 3000, func() [][]byte {
			var rs [][]byte
			for i := range 100 {
				rs = append(rs, record(9, 40, byte(i)))
			}
			return rs
		}(), 0},
		{"lost", 64, 0, [][]byte{lost, record(9, 16, 1)}, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := ringData{data: make([]byte, tt.size)}
			head := put(d.data, tt.tail, tt.recs...)
			var got [][]byte
			tail, n, err := d.read(head, tt.tail, func(rec []byte) {
				got = append(got, bytes.Clone(rec))
			})
			if err != nil {
				t.Fatal(err)
			}
			if tail != head || n != len(tt.recs) {
				t.Errorf("tail %d n %d, want %d and %d", tail, n, head, len(tt.recs))
			}
			for i := range tt.recs {
				if i >= len(got) || !bytes.Equal(got[i], tt.recs[i]) {
					t.Fatalf("record %d: got %v, want %v", i, got, tt.recs[i])
				}
			}
			if d.lost != tt.wantLost {
				t.Errorf("lost %d, want %d", d.lost, tt.wantLost)
			}
		})
	}
}

func TestRingCorrupt(t *testing.T) {
	tests := []struct {
		name      string
		head      uint64
		recs      [][]byte
		wantValid int
	}{
		{"size zero", 0, [][]byte{record(9, 16, 1), record(9, 0, 0)}, 1},
		{"size below header", 0, [][]byte{record(9, 4, 0)}, 0},
		{"larger than written", 16, [][]byte{record(9, 32, 1)}, 0},
		{"larger than ring", 0, [][]byte{record(9, 16, 1), record(9, 1024, 2)[:48]}, 1},
		{"stray bytes", 20, [][]byte{record(9, 16, 1)}, 1},
		{"head too far", 200, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := ringData{data: make([]byte, 64)}
			head := put(d.data, 0, tt.recs...)
			if tt.head != 0 {
				head = tt.head
			}
			n := 0
			tail, _, err := d.read(head, 0, func([]byte) { n++ })
			if !errors.Is(err, ErrCorruptRing) {
				t.Fatalf("err = %v, want ErrCorruptRing", err)
			}
			if tail != head {
				t.Errorf("tail %d after corruption, want head %d so the reader resyncs", tail, head)
			}
			if n != tt.wantValid {
				t.Errorf("delivered %d records before the bad one, want %d", n, tt.wantValid)
			}
		})
	}
}

func TestRingReadNoAllocs(t *testing.T) {
	d := ringData{data: make([]byte, 4096)}
	var recs [][]byte
	for range 50 {
		recs = append(recs, record(9, 48, 1))
	}
	tail := uint64(4000)
	head := put(d.data, tail, recs...)
	d.scratch = make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := d.read(head, tail, func([]byte) {}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per drain, want 0", allocs)
	}
}

// BenchmarkRingDrain drains a full 256 KiB ring of 48-byte records (the
// size of a sample with IP, TID, TIME, CPU, PERIOD and IDENTIFIER), so some
// records wrap.
func BenchmarkRingDrain(b *testing.B) {
	d := ringData{data: make([]byte, 64*4096)}
	const recSize = 48
	n := len(d.data) / recSize
	tail := uint64(len(d.data) / 3)
	var head uint64
	for i := range n {
		head = put(d.data, tail+uint64(i*recSize), record(9, recSize, byte(i)))
	}
	b.SetBytes(int64(n * recSize))
	b.ReportAllocs()
	var sum uint64
	for b.Loop() {
		if _, _, err := d.read(head, tail, func(rec []byte) { sum += uint64(rec[8]) }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n), "records/op")
}
