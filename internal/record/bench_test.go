package record

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/perfdata"
)

// BenchmarkHandle measures the recorder's per-record cost on the drain
// path: writing a raw sample and noting its time and image.
func BenchmarkHandle(b *testing.B) {
	for _, callchain := range []bool{false, true} {
		name := "ip"
		if callchain {
			name = "callchain"
		}
		b.Run(name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "bench.data"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			st := perfdata.SampleIdentifier | perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SampleCPU | perfdata.SamplePeriod
			if callchain {
				st |= perfdata.SampleCallchain
			}
			attr := &perfdata.Attr{Type: perfdata.TypeSoftware, SampleType: st, Flags: perfdata.FlagSampleIDAll, IDs: []uint64{1}}
			sink, err := newFileSink(f, false, attr, nil)
			if err != nil {
				b.Fatal(err)
			}
			r := newRecorder(attr, true)
			r.sink = sink
			r.procs.Map(process.Mapping{PID: 42, Start: 0x400000, End: 0x500000, Path: "/bin/work", Exec: true})
			// id, ip, pid/tid, time, cpu, period [, nr, 16 frames]
			words := []uint64{1, 0x401234, 42 | 42<<32, 1000, 0, 250000}
			if callchain {
				words = append(words, 16)
				for i := range 16 {
					words = append(words, 0x401000+uint64(i))
				}
			}
			rec := make([]byte, 8+8*len(words))
			binary.LittleEndian.PutUint32(rec, uint32(perfdata.RecordSample))
			binary.LittleEndian.PutUint16(rec[4:], perfdata.MiscUser)
			binary.LittleEndian.PutUint16(rec[6:], uint16(len(rec)))
			for i, v := range words {
				binary.LittleEndian.PutUint64(rec[8+8*i:], v)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(rec)))
			for b.Loop() {
				r.handle(rec)
				if len(r.pending) == 4096 {
					r.endRound()
				}
			}
			if r.err != nil {
				b.Fatal(r.err)
			}
		})
	}
}
