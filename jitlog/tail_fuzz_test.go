package jitlog

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// tailDB is a second seed database for FuzzTail: several loads, a clock,
// TSC-stamped enter and exit, a torn record between published ones.
func tailDB(f *testing.F) []byte {
	l, err := Open(Options{Dir: f.TempDir(), Name: "tail"})
	if err != nil {
		f.Fatal(err)
	}
	for i := range 3 {
		seq, _ := l.CodeLoad(0x1000*uintptr(i+1), 16, "f", &Load{Code: bytes.Repeat([]byte{0x90}, 16)})
		l.Enter(1, seq)
		l.Exit(1)
		if i == 1 {
			l.reserve(24)
		}
	}
	end := *l.appendp
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(l.Path())
	if err != nil {
		f.Fatal(err)
	}
	return b[:end+closeSize]
}

// frames returns the offsets of db's records, in file order.
func frames(db []byte) []uint64 {
	var out []uint64
	for off := uint64(HeaderSize); off+frameSize <= uint64(len(db)); {
		size := uint64(le.Uint32(db[off:]))
		if size < frameSize || off+size > uint64(len(db)) {
			break
		}
		out = append(out, off)
		off += size
	}
	return out
}

// FuzzTail follows a database while ops, two bytes each, act on its file
// as writers (and worse) would: claim a record (its size word), publish a
// claimed one (body, then commit word; several writers publish out of
// order), grow the file with zeros, poll, and the hostile ones: truncate
// the file, flip a byte, say the writer died. Poll must return errors, not
// panic or hang, and never more records than the bytes can hold. Without
// the hostile ops, once every record is published and the writer gone,
// the records polled are those a Reader reads from the whole database.
func FuzzTail(f *testing.F) {
	dbs := [][]byte{seedDB(f), tailDB(f)}
	// One file, emptied for each input: on this project's ext4 (mounted
	// with discard) creating, truncating and removing a file per input
	// took 50 ms; tmpfs takes microseconds.
	dir := "/dev/shm"
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		dir = ""
	}
	dir, err := os.MkdirTemp(dir, "jitlog-fuzz")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "anon.1")
	f.Add(uint8(0), []byte{1, 0, 2, 0, 3, 0, 1, 0, 1, 0, 3, 0, 2, 1, 2, 0, 3, 0})
	f.Add(uint8(1), []byte{0, 4, 1, 0, 1, 0, 1, 0, 3, 0, 2, 2, 3, 0, 2, 0, 2, 0, 3, 0})
	f.Add(uint8(1), []byte{1, 0, 2, 0, 3, 0, 4, 100, 3, 0, 1, 0, 2, 0, 3, 0})
	f.Add(uint8(0), []byte{1, 0, 1, 0, 2, 0, 3, 0, 5, 9, 3, 0, 6, 0, 3, 0})
	f.Fuzz(func(t *testing.T, which uint8, ops []byte) {
		db := dbs[int(which)%len(dbs)]
		recs := frames(db)
		file, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		tail, err := OpenTail(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tail.Close()
		alive := true
		tail.Alive = func(*Header) bool { return alive }

		var size int64
		setSize := func(n int64) {
			if err := file.Truncate(n); err != nil {
				t.Fatal(err)
			}
			size = n
		}
		write := func(b []byte, off uint64) {
			if int64(off)+int64(len(b)) > size {
				setSize(int64(off) + int64(len(b)))
			}
			if _, err := file.WriteAt(b, int64(off)); err != nil {
				t.Fatal(err)
			}
		}
		header := false
		claimed, published := 0, 0
		var pending []int // claimed, not published
		hostile := false
		var got []Record
		poll := func() {
			rs, err := tail.Poll()
			if len(rs) > int(size/frameSize)+1 {
				t.Fatalf("%d records from %d bytes", len(rs), size)
			}
			got = append(got, rs...)
			_ = err
		}
		claim := func() {
			if !header {
				// The magic last, as Open publishes the header.
				write(db[8:HeaderSize], 8)
				write(db[:8], 0)
				header = true
			}
			if claimed == len(recs) {
				return
			}
			off := recs[claimed]
			write(db[off:off+4], off)
			pending = append(pending, claimed)
			claimed++
		}
		publish := func(i int) {
			if len(pending) == 0 {
				return
			}
			i %= len(pending)
			off := recs[pending[i]]
			size := uint64(le.Uint32(db[off:]))
			write(db[off+frameSize:off+size], off+frameSize)
			write(db[off+4:off+8], off+4)
			pending = append(pending[:i], pending[i+1:]...)
			published++
		}
		if len(ops) > 256 {
			ops = ops[:256]
		}
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%7, ops[i+1]
			switch op {
			case 0:
				setSize(size + int64(arg+1)*64)
			case 1:
				claim()
			case 2:
				publish(int(arg))
			case 3:
				poll()
			case 4:
				hostile = true
				setSize(size * int64(arg) / 255)
			case 5:
				if size > 0 {
					hostile = true
					off := size * int64(arg) / 256
					var b [1]byte
					file.ReadAt(b[:], off)
					b[0] ^= 0x5a
					file.WriteAt(b[:], off)
				}
			case 6:
				hostile = hostile || arg&1 == 0
				alive = arg&1 != 0
			}
		}
		if hostile {
			poll()
			return
		}
		for claimed < len(recs) {
			claim()
		}
		for len(pending) > 0 {
			publish(0)
		}
		alive = false
		poll()
		r, err := NewReader(bytes.NewReader(db), int64(len(db)))
		if err != nil {
			t.Fatal(err)
		}
		var want []Record
		for r.Next() {
			want = append(want, r.Record())
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("polled %d records, read %d:\n%+v\nwant\n%+v", len(got), len(want), got, want)
		}
	})
}
