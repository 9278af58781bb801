package perfdata_test

import (
	"bytes"
	"testing"

	"github.com/jitprof/jitprof/perfdata"
)

// TestDecoderRoundTrip decodes every kernel record of a file of every
// type from its bytes, as a ring buffer holds them, and encodes it back:
// the bytes must be the same, also with only the fixed sample fields
// where those are all a sample has.
func TestDecoderRoundTrip(t *testing.T) {
	f := chunkFile(t)
	d := perfdata.NewDecoder(f.Attrs)
	fixed := perfdata.NewDecoder(f.Attrs)
	fixed.FixedSampleFields = true
	n := 0
	for r := f.Records(); r.Next(); {
		if r.Record().Type().IsUser() {
			continue
		}
		want, err := perfdata.AppendRecord(nil, r.Record())
		if err != nil {
			t.Fatal(err)
		}
		rec, err := d.Decode(want)
		if err != nil {
			t.Fatalf("%v at %d: %v", r.Record().Type(), r.Offset(), err)
		}
		got, err := perfdata.AppendRecord(nil, rec)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%v at %d: decoded and encoded again to %x (%v), want %x", r.Record().Type(), r.Offset(), got, err, want)
		}
		if s, ok := r.Record().(*perfdata.Sample); ok {
			got, err := fixed.Decode(want)
			fs, _ := got.(*perfdata.Sample)
			if err != nil || fs == nil || fs.IP != s.IP || fs.PID != s.PID || fs.TID != s.TID || fs.Time != s.Time || fs.CPU != s.CPU || fs.Period != s.Period || fs.Attr != s.Attr {
				t.Errorf("fixed fields of the sample at %d: %+v (%v), want those of %+v", r.Offset(), got, err, s)
			}
		}
		n++
	}
	if n == 0 {
		t.Fatal("no kernel records")
	}
	if _, err := d.Decode([]byte{1, 2, 3}); err == nil {
		t.Error("a 3-byte record decoded")
	}
}
