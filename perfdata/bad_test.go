package perfdata_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/jitprof/jitprof/internal/perftest"
	"github.com/jitprof/jitprof/perfdata"
)

// smallFile returns a valid perf.data made by the Writer: one attr with
// callchains, a COMM and n samples.
func smallFile(t testing.TB, n int) []byte {
	t.Helper()
	attr := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 1000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SampleCallchain | perfdata.SamplePeriod,
		Flags:      perfdata.FlagSampleIDAll | perfdata.FlagComm,
		IDs:        []uint64{1},
	}
	recs := []perfdata.Record{&perfdata.Comm{Common: perfdata.Common{Attr: attr, PID: 1, TID: 1}, PID: 1, TID: 1, Comm: "x"}}
	for i := range n {
		recs = append(recs, &perfdata.Sample{Common: perfdata.Common{Attr: attr, PID: 1, TID: 1, Time: uint64(i)}, IP: 0x1000 + uint64(i), Period: 1000,
			Callchain: []uint64{perfdata.CallchainUser, 0x1000 + uint64(i), 0x2000}})
	}
	path := perftest.WriteData(t, []*perfdata.Attr{attr}, recs, func(fs *perfdata.Features) { fs.SetString(perfdata.FeatHostname, "h") })
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readAll parses data and reads every record, returning the first error.
func readAll(data []byte) (int, error) {
	f, err := perfdata.Parse(data)
	if err != nil {
		return 0, err
	}
	r := f.Records()
	n := 0
	for r.Next() {
		n++
	}
	return n, r.Err()
}

func TestBadInput(t *testing.T) {
	good := smallFile(t, 3)
	if n, err := readAll(good); err != nil || n != 4 {
		t.Fatalf("the good file: %d records, %v", n, err)
	}
	f, _ := perfdata.Parse(good)
	dataOff := int(f.DataOffset)
	// Offsets of the records: COMM, then the samples.
	commSize := int(binary.LittleEndian.Uint16(good[dataOff+6:]))
	sample0 := dataOff + commSize

	put64 := func(b []byte, off int, v uint64) []byte { binary.LittleEndian.PutUint64(b[off:], v); return b }
	put16 := func(b []byte, off int, v uint16) []byte { binary.LittleEndian.PutUint16(b[off:], v); return b }
	mut := func(fn func(b []byte) []byte) []byte { return fn(bytes.Clone(good)) }
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "shorter than a header"},
		{"short header", good[:50], "shorter than its 104-byte header"},
		{"wrong magic", mut(func(b []byte) []byte { copy(b, "NOTPERF!"); return b }), "magic"},
		{"old magic", mut(func(b []byte) []byte { copy(b, "PERFFILE"); return b }), "version 1"},
		{"header size", mut(func(b []byte) []byte { return put64(b, 8, 96) }), "header size 96 at offset 8"},
		{"attr size perf never used", mut(func(b []byte) []byte { return put64(b, 16, 65) }), "attr size 65 at offset 16"},
		{"attr section past the end", mut(func(b []byte) []byte { return put64(b, 24, uint64(len(b))) }), "attr section"},
		{"data past the end", mut(func(b []byte) []byte { return put64(b, 48, uint64(len(b))) }), "data section"},
		{"feature headers past the end", mut(func(b []byte) []byte { return put64(b, 48, uint64(len(b)-dataOff-8)) }), "feature section headers"},
		{"record size 0", mut(func(b []byte) []byte { return put16(b, sample0+6, 0) }), "offset " + itoa(sample0) + " has size 0"},
		{"record past the data", mut(func(b []byte) []byte { return put16(b, sample0+6, 0xfff8) }), "record at offset " + itoa(sample0)},
		{"callchain longer than the record", mut(func(b []byte) []byte {
			// IP, TID, TIME, PERIOD, then the callchain's nr.
			return put64(b, sample0+8+32, 1<<40)
		}), "callchain of 1099511627776 entries"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := readAll(c.data)
			if err == nil {
				t.Fatalf("no error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
	if _, err := readAll(mut(func(b []byte) []byte { copy(b, "NOTPERF!"); return b })); !errors.Is(err, perfdata.ErrBadMagic) {
		t.Errorf("wrong magic: %v is not ErrBadMagic", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// bigEndianFile builds, by hand, the file a big-endian machine's perf
// writes: every field byte-swapped, the attr's bit fields bit-reversed in
// each byte.
func bigEndianFile(samples []perfdata.Sample, attr *perfdata.Attr) []byte {
	be := binary.BigEndian
	var attrb []byte
	attrb = be.AppendUint32(attrb, attr.Type)
	attrb = be.AppendUint32(attrb, perfdata.AttrSizeVer0)
	attrb = be.AppendUint64(attrb, attr.Config)
	attrb = be.AppendUint64(attrb, attr.SamplePeriod)
	attrb = be.AppendUint64(attrb, uint64(attr.SampleType))
	attrb = be.AppendUint64(attrb, uint64(attr.ReadFormat))
	for i := 0; i < 8; i++ {
		attrb = append(attrb, bits.Reverse8(byte(uint64(attr.Flags)>>(8*i))))
	}
	attrb = be.AppendUint32(attrb, 0)
	attrb = be.AppendUint32(attrb, 0)
	attrb = be.AppendUint64(attrb, 0)
	const hdr = 104
	idsOff := hdr
	attrsOff := idsOff + 8
	dataOff := attrsOff + len(attrb) + 16
	var data []byte
	for _, s := range samples {
		var body []byte
		body = be.AppendUint64(body, s.IP)
		body = be.AppendUint32(be.AppendUint32(body, s.PID), s.TID)
		body = be.AppendUint64(body, s.Time)
		body = be.AppendUint64(body, s.ID)
		body = be.AppendUint32(be.AppendUint32(body, s.CPU), 0)
		body = be.AppendUint64(body, s.Period)
		body = be.AppendUint64(body, uint64(len(s.Callchain)))
		for _, ip := range s.Callchain {
			body = be.AppendUint64(body, ip)
		}
		data = be.AppendUint32(data, uint32(perfdata.RecordSample))
		data = be.AppendUint16(data, s.Misc)
		data = be.AppendUint16(data, uint16(8+len(body)))
		data = append(data, body...)
	}
	var b []byte
	b = append(b, "2ELIFREP"...)
	b = be.AppendUint64(b, hdr)
	b = be.AppendUint64(b, uint64(len(attrb)+16))
	b = be.AppendUint64(be.AppendUint64(b, uint64(attrsOff)), uint64(len(attrb)+16))
	b = be.AppendUint64(be.AppendUint64(b, uint64(dataOff)), uint64(len(data)))
	b = be.AppendUint64(be.AppendUint64(b, 0), 0)
	b = append(b, make([]byte, 32)...)
	b = be.AppendUint64(b, attr.IDs[0])
	b = append(b, attrb...)
	b = be.AppendUint64(be.AppendUint64(b, uint64(idsOff)), 8)
	return append(b, data...)
}

func TestReadBigEndian(t *testing.T) {
	attr := &perfdata.Attr{
		Type: perfdata.TypeSoftware, SamplePeriod: 4000,
		SampleType: perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SampleID | perfdata.SampleCPU | perfdata.SamplePeriod | perfdata.SampleCallchain,
		Flags:      perfdata.FlagFreq | perfdata.FlagSampleIDAll | perfdata.FlagMmap2 | perfdata.FlagDisabled | perfdata.FlagInherit | perfdata.FlagExcludeKernel,
		IDs:        []uint64{0x1122334455},
	}
	attr.SetPreciseIP(2)
	want := []perfdata.Sample{
		{Common: perfdata.Common{Misc: perfdata.MiscUser, PID: 100, TID: 101, Time: 123456789, ID: 0x1122334455, CPU: 3}, IP: 0xc000123456, Period: 250000, Callchain: []uint64{perfdata.CallchainUser, 0xc000123456, 0xc000000100}},
		{Common: perfdata.Common{Misc: perfdata.MiscKernel, PID: 0, TID: 0, Time: 123456999, ID: 0x1122334455, CPU: 1}, IP: 0xffffffff81000010, Period: 1, Callchain: []uint64{perfdata.CallchainKernel, 0xffffffff81000010}},
	}
	f, err := perfdata.Parse(bigEndianFile(want, attr))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Swapped {
		t.Error("Swapped is false for a big-endian file")
	}
	a := f.Attrs[0]
	if a.Flags != attr.Flags || a.SampleType != attr.SampleType || a.SamplePeriod != 4000 || a.PreciseIP() != 2 || a.IDs[0] != attr.IDs[0] {
		t.Errorf("attr read as %+v, want flags %v sample_type %v", a, attr.Flags, attr.SampleType)
	}
	r := f.Records()
	i := 0
	for r.Next() {
		s := r.Record().(*perfdata.Sample)
		w := want[i]
		if s.IP != w.IP || s.PID != w.PID || s.TID != w.TID || s.Time != w.Time || s.CPU != w.CPU || s.Period != w.Period || s.Misc != w.Misc || s.ID != w.ID {
			t.Errorf("sample %d: %+v, want %+v", i, s, w)
		}
		if !equalU64(s.Callchain, w.Callchain) {
			t.Errorf("sample %d: callchain %x, want %x", i, s.Callchain, w.Callchain)
		}
		i++
	}
	if r.Err() != nil || i != len(want) {
		t.Errorf("read %d samples, err %v", i, r.Err())
	}
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
