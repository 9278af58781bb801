package sampledb

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchSamples makes n samples of threads threads, each running an
// application and three libraries of images images, keys drawn from a
// skewed distribution (a few hot offsets, a long tail) of keys offsets per
// image. A ring buffer delivers a CPU's samples in time order, so a
// thread's samples come in runs: run is their length (1: every sample
// from another thread, the worst case).
func benchSamples(b *testing.B, db *DB, n, images, threads, keys, run int) []Sample {
	rng := rand.New(rand.NewPCG(1, 1))
	var ids []ImageID
	for i := range images {
		id, err := db.FileImage(FileIdent{Ino: uint64(i)}, "/usr/lib/lib"+strconv.Itoa(i)+".so", ImageInfo{})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(keys-1))
	out := make([]Sample, n)
	var cur Sample
	var uses [4]ImageID
	for i := range out {
		if i%run == 0 {
			t := uint32(rng.IntN(threads))
			cur = Sample{App: ids[int(t)%len(ids)], TGID: 1000 + t, TID: 1000 + t, CPU: t % 2}
			for j := range uses {
				uses[j] = ids[(int(t)+7*j)%len(ids)]
			}
		}
		s := cur
		// The application and the first library are the hottest.
		s.Image = uses[min(rng.IntN(6), 3)]
		s.Key1 = 0x1000 + 4*zipf.Uint64()
		out[i] = s
	}
	return out
}

// BenchmarkAdd is the ingest path: a decoded sample to its count in its
// file's table in memory, in steady state (every file and key seen once,
// then flushed). One op is one sample.
func BenchmarkAdd(b *testing.B) {
	for _, bc := range []struct {
		name                       string
		sep                        Separate
		images, threads, keys, run int
	}{
		{"none", SeparateNone, 40, 16, 5000, 16},
		{"lib,thread", SeparateLib | SeparateThread, 40, 16, 5000, 16},
		{"all", SeparateAll, 40, 64, 5000, 16},
		{"all/scattered", SeparateAll, 40, 64, 5000, 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			db, err := Create(b.TempDir(), Options{Separate: bc.sep, Events: testEvents, MaxOpen: 1 << 16})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			samples := benchSamples(b, db, 1<<20, bc.images, bc.threads, bc.keys, bc.run)
			for i := range samples {
				db.Add(&samples[i])
			}
			if err := db.Flush(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			cpu := cpuTime()
			for b.Loop() {
				if err := db.Add(&samples[i&(len(samples)-1)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			reportCPU(b, cpu)
			b.ReportMetric(float64(db.Stats().Files), "files")
		})
	}
}

// cpuTime is the CPU time the process used. On a machine other jobs keep
// busy, a benchmark's wall time per op counts the time it waited for a
// CPU; CPU time per op is what a core spends on one, the per-core rate
// the target is stated in.
func cpuTime() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports CPU ns per op since start, and millions of ops per
// CPU second.
func reportCPU(b *testing.B, start time.Duration) {
	ns := float64(cpuTime()-start) / float64(b.N)
	b.ReportMetric(ns, "cpu-ns/op")
	b.ReportMetric(1e3/ns, "M/cpu-s")
}

// BenchmarkFlush is a flush of n open files with 100 keys counted in each
// since the last flush (the session's metadata written too). One op is one
// flush.
func BenchmarkFlush(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			db, err := Create(b.TempDir(), Options{Separate: SeparateThread, Events: testEvents, MaxOpen: 2 * n})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			img, _ := db.FileImage(FileIdent{}, "/bin/x", ImageInfo{})
			add := func() {
				for tid := range uint32(n) {
					for k := range uint64(100) {
						db.Add(&Sample{Image: img, TGID: 1, TID: tid, Key1: k * 16})
					}
				}
			}
			add()
			if err := db.Flush(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				add()
				b.StartTimer()
				c := cpuTime()
				if err := db.Flush(); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - c
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/file")
		})
	}
}

// BenchmarkFileSize reports a sample file's bytes per distinct key, after
// a table of n keys is written (the table doubles, so it is 32 to 64 bytes
// a key and the header, rounded up to blocks on disk).
func BenchmarkFileSize(b *testing.B) {
	for _, n := range []int{100, 10000, 1000000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			root := openRoot(b, b.TempDir())
			var size int64
			for b.Loop() {
				w, err := createFile(root, "f", testHeader(KeyAnon))
				if err != nil {
					b.Fatal(err)
				}
				for k := range uint64(n) {
					if _, err := w.insert(k*4, k%3, 1); err != nil {
						b.Fatal(err)
					}
				}
				size = int64(len(w.mem))
				w.close()
			}
			b.ReportMetric(float64(size)/float64(n), "bytes/key")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/insert")
		})
	}
}
