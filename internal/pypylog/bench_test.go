package pypylog

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// benchLog is testdata/bridges.log repeated to about 32 MB, a balanced
// log of loops, bridges and their traces.
func benchLog(b *testing.B) []byte {
	one, err := os.ReadFile("testdata/bridges.log")
	if err != nil {
		b.Fatal(err)
	}
	return bytes.Repeat(one, 32<<20/len(one))
}

// BenchmarkReader: events only, the line scan every use of a log pays.
func BenchmarkReader(b *testing.B) {
	data := benchLog(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(bytes.NewReader(data))
		for r.Next() {
		}
		if r.Err() != nil {
			b.Fatal(r.Err())
		}
	}
}

// BenchmarkRead: the loops, bridges and traces kept, without and with
// the operations' text.
func BenchmarkRead(b *testing.B) {
	data := benchLog(b)
	for _, tc := range []struct {
		name string
		opts Options
	}{{"positions", Options{}}, {"ops", Options{Ops: true}}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Read(bytes.NewReader(data), tc.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFile reads the log JITPROF_BENCH_PYPYLOG names from disk, as
// bench/pypylog/run.sh does with a generated 1 GB log.
func BenchmarkFile(b *testing.B) {
	path := os.Getenv("JITPROF_BENCH_PYPYLOG")
	if path == "" {
		b.Skip("JITPROF_BENCH_PYPYLOG names no log (bench/pypylog/run.sh sets it)")
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, read func(io.Reader) error) {
		b.SetBytes(st.Size())
		b.ReportAllocs()
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			err = read(f)
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("reader", func(b *testing.B) {
		run(b, func(f io.Reader) error {
			r := NewReader(f)
			for r.Next() {
			}
			return r.Err()
		})
	})
	b.Run("read", func(b *testing.B) {
		run(b, func(f io.Reader) error {
			_, err := Read(f, Options{})
			return err
		})
	})
}

// BenchmarkFollow: the same log fed to a Follower in 256 KiB chunks, as
// the daemon reads a log that grows, its codes named as they come.
func BenchmarkFollow(b *testing.B) {
	data := benchLog(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		f := NewFollower()
		for off := 0; off < len(data); {
			n, err := f.Feed(data[off:min(off+256<<10, len(data))])
			if err != nil {
				b.Fatal(err)
			}
			f.Codes()
			off += n
		}
	}
}
