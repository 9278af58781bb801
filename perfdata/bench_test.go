package perfdata_test

import (
	"os"
	"testing"

	"github.com/jitprof/jitprof/perfdata"
)

// benchFile writes n samples with 12-entry callchains, like a -g
// recording, and returns the path.
func benchFile(b *testing.B, n int) string {
	b.Helper()
	attr := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 4000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SampleID | perfdata.SampleCPU | perfdata.SamplePeriod | perfdata.SampleCallchain,
		Flags:      perfdata.FlagFreq | perfdata.FlagSampleIDAll | perfdata.FlagMmap2 | perfdata.FlagComm,
		IDs:        []uint64{1, 2},
	}
	path := b.TempDir() + "/bench.data"
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w, err := perfdata.NewWriter(f, []*perfdata.Attr{attr})
	if err != nil {
		b.Fatal(err)
	}
	chain := []uint64{perfdata.CallchainUser}
	for i := 0; i < 11; i++ {
		chain = append(chain, 0x400000+uint64(i)*0x100)
	}
	s := &perfdata.Sample{Common: perfdata.Common{Attr: attr, PID: 10, TID: 11, ID: 1}, Period: 250000, Callchain: chain}
	for i := 0; i < n; i++ {
		s.Time = uint64(i) * 1000
		s.IP = 0x400000 + uint64(i%4096)
		s.CPU = uint32(i & 1)
		if err := w.WriteRecord(s); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	return path
}

// BenchmarkRead decodes every record of a 100k-sample file, the way every
// report starts.
func BenchmarkRead(b *testing.B) { benchRead(b, func(*perfdata.Reader) {}) }

// BenchmarkReadSkipCallchains is BenchmarkRead for reports that need
// every sample field but the callchain.
func BenchmarkReadSkipCallchains(b *testing.B) {
	benchRead(b, func(r *perfdata.Reader) { r.SkipCallchains = true })
}

// BenchmarkReadFixedSampleFields is BenchmarkRead for flat reports,
// which need only the fixed fields of a sample.
func BenchmarkReadFixedSampleFields(b *testing.B) {
	benchRead(b, func(r *perfdata.Reader) { r.FixedSampleFields = true })
}

// benchRead reads a 100k-sample file with a Reader set up by setup.
func benchRead(b *testing.B, setup func(*perfdata.Reader)) {
	path := benchFile(b, 100000)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		f, err := perfdata.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		r := f.Records()
		setup(r)
		var sum uint64
		for r.Next() {
			if s, ok := r.Record().(*perfdata.Sample); ok {
				sum += s.IP + uint64(len(s.Callchain))
			}
		}
		if r.Err() != nil || sum == 0 {
			b.Fatal(r.Err())
		}
		f.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100000, "ns/sample")
}

// BenchmarkWrite encodes samples with callchains through the Writer.
func BenchmarkWrite(b *testing.B) {
	attr := &perfdata.Attr{
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SamplePeriod | perfdata.SampleCallchain,
		IDs:        []uint64{1},
	}
	f, err := os.Create(b.TempDir() + "/w.data")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w, err := perfdata.NewWriter(f, []*perfdata.Attr{attr})
	if err != nil {
		b.Fatal(err)
	}
	s := &perfdata.Sample{Common: perfdata.Common{Attr: attr}, IP: 1, Callchain: make([]uint64, 12)}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.WriteRecord(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadSideBand decodes 100k of the kernel's other records
// (MMAP2, COMM, FORK, EXIT in turn), as a recording of a machine that
// starts processes all the time holds, through their layouts.
func BenchmarkReadSideBand(b *testing.B) {
	attr := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 4000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SampleID | perfdata.SampleCPU | perfdata.SamplePeriod,
		Flags:      perfdata.FlagFreq | perfdata.FlagSampleIDAll | perfdata.FlagMmap2 | perfdata.FlagComm | perfdata.FlagTask,
		IDs:        []uint64{1},
	}
	path := b.TempDir() + "/side.data"
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w, err := perfdata.NewWriter(f, []*perfdata.Attr{attr})
	if err != nil {
		b.Fatal(err)
	}
	for i := range uint32(25000) {
		c := perfdata.Common{Attr: attr, PID: i, TID: i, Time: uint64(i) * 1000, ID: 1, Misc: perfdata.MiscUser}
		for _, rec := range []perfdata.Record{
			&perfdata.Fork{Common: c, PID: i, PPID: 1, TID: i, PTID: 1, ForkTime: c.Time},
			&perfdata.Comm{Common: c, PID: i, TID: i, Comm: "worker"},
			&perfdata.Mmap{Common: c, Version2: true, PID: i, TID: i, Addr: 0x400000, Len: 0x1000, Maj: 8, Min: 1, Ino: 1234, Prot: 5, Flags: 2, Filename: "/usr/lib/x86_64-linux-gnu/libc.so.6"},
			&perfdata.Exit{Common: c, PID: i, PPID: 1, TID: i, PTID: 1, ExitTime: c.Time},
		} {
			if err := w.WriteRecord(rec); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		pf, err := perfdata.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		r := pf.Records()
		n := 0
		for r.Next() {
			if m, ok := r.Record().(*perfdata.Mmap); ok && m.Len != 0 {
				n++
			}
		}
		if r.Err() != nil || n != 25000 {
			b.Fatal(r.Err(), n)
		}
		pf.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100000, "ns/record")
}
