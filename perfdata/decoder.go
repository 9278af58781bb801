package perfdata

import (
	"encoding/binary"
	"fmt"
)

// Decoder decodes kernel records one at a time from the bytes a perf
// ring buffer holds (a perf_event_header and its body, in the host's
// byte order), for a recorder or a collector that sees records before
// any file does. It decodes as a Reader does, with the same table of
// sample fields, and like a Reader it reuses one value per record type:
// a record is valid until the next call to Decode.
type Decoder struct {
	// FixedSampleFields decodes of a SAMPLE only its fixed fields, as
	// Reader.FixedSampleFields does.
	FixedSampleFields bool

	r Reader
}

// NewDecoder returns a Decoder of the records of events with attrs,
// whose IDs tell a record's attr when there are several.
func NewDecoder(attrs []*Attr) *Decoder {
	f := &File{Attrs: attrs, Swapped: binary.NativeEndian.Uint16([]byte{0, 1}) == 1}
	f.indexAttrs()
	return &Decoder{r: Reader{f: f}}
}

// Decode decodes one record.
func (d *Decoder) Decode(raw []byte) (Record, error) {
	if len(raw) < 8 {
		return nil, fmt.Errorf("a record of %d bytes, less than its header", len(raw))
	}
	if d.FixedSampleFields && RecordType(binary.NativeEndian.Uint32(raw)) == RecordSample {
		if s := d.r.fixedSample(raw, 0); s != nil {
			return s, nil
		}
	}
	return d.r.decode(raw, 0)
}
