package jitlog

import (
	"bytes"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

var name64 = strings.Repeat("n", 64)

func benchLogger(b *testing.B, jitdump bool) *Logger {
	b.Helper()
	// Big enough that a second of loads never fills it.
	dir := b.TempDir()
	if d := os.Getenv("BENCHDIR"); d != "" {
		dir = d
	}
	l, err := Open(Options{Dir: dir, MaxSize: 16 << 30, Jitdump: jitdump})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

func BenchmarkCodeLoad(b *testing.B) {
	l := benchLogger(b, false)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.CodeLoad(0x1000, 64, name64, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCodeLoad4 logs from 4 goroutines at once and reports the median
// of per-batch mean latencies, the figure the cost target is set in.
func BenchmarkCodeLoad4(b *testing.B) {
	l := benchLogger(b, false)
	benchParallel4(b, func() error {
		_, err := l.CodeLoad(0x1000, 64, name64, nil)
		return err
	})
}

// BenchmarkEnter and BenchmarkExit report, besides the mean, the median
// and 99th percentile over batches as benchParallel4 does: the figures the
// 30 ns target is set in.
func BenchmarkEnter(b *testing.B) {
	l := benchLogger(b, false)
	benchSerial(b, func() error { return l.Enter(1, 7) })
}

func BenchmarkExit(b *testing.B) {
	l := benchLogger(b, false)
	benchSerial(b, func() error { return l.Exit(1) })
}

func BenchmarkEnterExit4(b *testing.B) {
	l := benchLogger(b, false)
	benchParallel4(b, func() error {
		if err := l.Enter(1, 7); err != nil {
			return err
		}
		return l.Exit(1)
	})
}

// BenchmarkJitdumpCodeLoad is the same load as perf's jitdump record, one
// write(2) per record: the cost jitlog is compared with.
func BenchmarkJitdumpCodeLoad(b *testing.B) {
	l := benchLogger(b, true)
	b.ReportAllocs()
	var seq uint64
	for b.Loop() {
		seq++
		if err := l.jd.codeLoad(seq, uint64(nanotime()), 0x1000, 64, name64, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJitdumpCodeLoad4(b *testing.B) {
	l := benchLogger(b, true)
	var mu sync.Mutex
	var seq uint64
	benchParallel4(b, func() error {
		mu.Lock()
		seq++
		s := seq
		mu.Unlock()
		return l.jd.codeLoad(s, uint64(nanotime()), 0x1000, 64, name64, nil)
	})
}

func BenchmarkCodeLoadWithJitdump(b *testing.B) {
	l := benchLogger(b, true)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.CodeLoad(0x1000, 64, name64, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRead(b *testing.B) {
	l := benchLogger(b, false)
	for range 10000 {
		if _, err := l.CodeLoad(0x1000, 64, name64, nil); err != nil {
			b.Fatal(err)
		}
	}
	db, err := os.ReadFile(l.Path())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(*l.appendp))
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(db), int64(len(db)))
		if err != nil {
			b.Fatal(err)
		}
		for r.Next() {
		}
		if r.Err() != nil {
			b.Fatal(r.Err())
		}
	}
}

// batch is how many calls a latency sample of benchSerial and
// benchParallel4 averages over.
const batch = 64

// benchSerial runs op on one goroutine and reports, besides ns/op, the
// median and 99th percentile over batches of the mean latency.
func benchSerial(b *testing.B, op func() error) {
	var means []float64
	b.ReportAllocs()
	n, start := 0, nanotime()
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
		if n++; n == batch {
			now := nanotime()
			means = append(means, float64(now-start)/batch)
			n, start = 0, now
		}
	}
	reportBatches(b, means)
}

// benchParallel4 runs op from 4 goroutines and reports, besides ns/op of
// the whole, the median over batches of 64 calls of the mean latency one
// goroutine saw.
func benchParallel4(b *testing.B, op func() error) {
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((4 + procs - 1) / procs)
	var mu sync.Mutex
	var means []float64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var local []float64
		n, start := 0, nanotime()
		for pb.Next() {
			if err := op(); err != nil {
				b.Error(err)
				return
			}
			if n++; n == batch {
				now := nanotime()
				local = append(local, float64(now-start)/batch)
				n, start = 0, now
			}
		}
		mu.Lock()
		means = append(means, local...)
		mu.Unlock()
	})
	reportBatches(b, means)
}

// reportBatches reports the median and 99th percentile of batch means.
func reportBatches(b *testing.B, means []float64) {
	if len(means) > 0 {
		slices.Sort(means)
		b.ReportMetric(means[len(means)/2], "p50-ns/op")
		b.ReportMetric(means[len(means)*99/100], "p99-ns/op")
	}
}
