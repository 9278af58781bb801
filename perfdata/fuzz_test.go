package perfdata_test

import (
	"os"
	"testing"

	"github.com/jitprof/jitprof/perfdata"
)

// FuzzRead feeds arbitrary bytes to the file and pipe-mode readers and
// every typed feature accessor: they must return errors, never panic or
// loop. Seeds are small real perf recordings, named here so that a big
// file added to testdata for a unit test does not become a seed (the
// fuzzer would spend its time minimising it), and a Writer-made file.
func FuzzRead(f *testing.F) {
	for _, p := range []string{"testdata/callgraph.data", "testdata/pipe.data"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > 8<<10 {
			f.Fatalf("fuzz seed %s is %d bytes; keep seeds to a few KB", p, len(b))
		}
		f.Add(b)
	}
	f.Add(smallFile(f, 4))
	f.Fuzz(func(t *testing.T, data []byte) {
		if pf, err := perfdata.Parse(data); err == nil {
			drain(pf)
		}
		if pf, err := perfdata.NewStream(&byteReader{b: data}); err == nil {
			drain(pf)
		}
	})
}

func drain(f *perfdata.File) {
	if !f.Pipe {
		fixed := f.Records()
		fixed.FixedSampleFields = true
		for fixed.Next() {
		}
		end := f.DataOffset + f.DataSize
		for i := range int64(32) {
			f.Resync(f.DataOffset+f.DataSize*i/32, end)
		}
	}
	r := f.Records()
	for n := 0; r.Next(); n++ {
		if s, ok := r.Record().(*perfdata.Sample); ok {
			// Encoding what was decoded must not fail on a decoded sample.
			perfdata.AppendRecord(nil, s)
		}
	}
	fs := &f.Features
	fs.BuildIDs()
	fs.Cmdline()
	fs.EventDescs()
	fs.CPUTopology()
	fs.NrCPUs()
	fs.ClockData()
	fs.SampleTime()
	fs.TotalMem()
	fs.TracingData()
	for _, feat := range fs.List() {
		fs.String(feat)
	}
}

type byteReader struct {
	b   []byte
	off int
}

func (r *byteReader) Read(p []byte) (int, error) {
	if r.off >= len(r.b) {
		return 0, os.ErrClosed
	}
	n := copy(p, r.b[r.off:])
	r.off += n
	return n, nil
}
