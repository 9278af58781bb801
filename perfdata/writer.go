package perfdata

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Writer writes a perf.data file. The header, attrs and ids are written
// first, with a data size of 0, so that a writer killed before Close
// leaves a file readers (this package's and perf's) read to the last
// whole record; Close adds the feature sections and the final header.
type Writer struct {
	// Features are written by Close.
	Features Features
	// EventTypes, if set, is written by Close as the header's event_types
	// section, after the features, or in pipe mode as HEADER_EVENT_TYPE
	// records of at most 64 KiB, the last padded with zeros to 8 bytes.
	// perf has skipped both since Linux 3.x, in every tool (see
	// File.EventTypes), where a feature bit it does not know can crash
	// perf 6.1's inject.
	EventTypes []byte
	// EventTypesFrom, if set instead of EventTypes, writes the section's
	// bytes at Close, streamed (in pipe mode cut into records as
	// EventTypes is), so that a large section is never whole in memory.
	EventTypesFrom func(w io.Writer) error

	w        io.WriteSeeker // nil in pipe mode
	count    *countWriter   // pipe mode: what reached the stream
	size     int64          // after Close: the file's size
	bw       *bufio.Writer
	pipe     bool
	sent     map[Feature]bool // pipe mode: features already in the stream
	started  bool             // pipe mode: a data record has been written
	attrs    []*Attr
	attrSize int
	dataOff  int64
	dataSize int64
	buf      []byte
	err      error
	closed   bool
}

// writeBuffer is the Writer's buffer: 64 KiB makes writes cost no more
// per byte than larger ones, and a Writer cheap to make (1 MiB took a
// millisecond of zeroing and collecting, most of a small file's cost).
const writeBuffer = 64 << 10

// NewWriter starts a perf.data file on w with the given attrs, whose IDs
// must list the sample ids of every event the data will contain.
func NewWriter(w io.WriteSeeker, attrs []*Attr) (*Writer, error) {
	if len(attrs) == 0 {
		return nil, errors.New("perf.data writer: at least one attr is needed")
	}
	wr := &Writer{w: w, attrs: attrs, bw: bufio.NewWriterSize(w, writeBuffer)}
	for _, a := range attrs {
		if s := a.encodedSize(); s > wr.attrSize {
			wr.attrSize = s
		}
	}
	if _, err := w.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("perf.data writer: %w", err)
	}
	// Layout: header, id arrays, attrs, data.
	idsOff := int64(fileHeaderSz)
	var ids []byte
	var idSecs []section
	for _, a := range attrs {
		idSecs = append(idSecs, section{uint64(idsOff) + uint64(len(ids)), uint64(8 * len(a.IDs))})
		for _, id := range a.IDs {
			ids = le.AppendUint64(ids, id)
		}
	}
	attrsOff := idsOff + int64(len(ids))
	var attrBytes []byte
	for i, a := range attrs {
		b := *a
		b.Size = uint32(wr.attrSize)
		attrBytes = appendAttr(attrBytes, &b)
		attrBytes = le.AppendUint64(le.AppendUint64(attrBytes, idSecs[i].off), idSecs[i].size)
	}
	wr.dataOff = attrsOff + int64(len(attrBytes))
	hdr := wr.header(section{uint64(attrsOff), uint64(len(attrBytes))}, section{}, [4]uint64{})
	wr.write(hdr)
	wr.write(ids)
	wr.write(attrBytes)
	if wr.err == nil {
		// Make the header and attrs durable before any data, for the
		// killed-writer case.
		wr.err = wr.bw.Flush()
	}
	if wr.err != nil {
		return nil, fmt.Errorf("perf.data writer: %w", wr.err)
	}
	return wr, nil
}

func (w *Writer) header(attrs section, eventTypes section, bitmap [4]uint64) []byte {
	b := le.AppendUint64(nil, magicLE)
	b = le.AppendUint64(b, fileHeaderSz)
	b = le.AppendUint64(b, uint64(w.attrSize+sectionSz))
	b = le.AppendUint64(le.AppendUint64(b, attrs.off), attrs.size)
	b = le.AppendUint64(le.AppendUint64(b, uint64(w.dataOff)), uint64(w.dataSize))
	b = le.AppendUint64(le.AppendUint64(b, eventTypes.off), eventTypes.size)
	for _, x := range bitmap {
		b = le.AppendUint64(b, x)
	}
	return b
}

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	_, w.err = w.bw.Write(b)
}

// WriteRecord encodes and writes a record.
func (w *Writer) WriteRecord(rec Record) error {
	if w.err != nil {
		return w.err
	}
	var err error
	w.buf, err = AppendRecord(w.buf[:0], rec)
	if err != nil {
		return err
	}
	return w.WriteRaw(w.buf)
}

// WriteRaw writes a record already encoded little-endian, header
// included, such as the kernel leaves it in a perf ring buffer.
func (w *Writer) WriteRaw(raw []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("perf.data writer: write after Close")
	}
	if len(raw) < 8 || int(le.Uint16(raw[6:])) != len(raw) {
		return fmt.Errorf("perf.data writer: record of %d bytes has header size %d", len(raw), sizeOf(raw))
	}
	if w.pipe && !w.started {
		// Features set by now, such as the tracepoint formats perf
		// needs to decode samples, go before the first record.
		w.started = true
		w.sendFeatures()
	}
	w.write(raw)
	w.dataSize += int64(len(raw))
	return w.err
}

func sizeOf(raw []byte) int {
	if len(raw) < 8 {
		return 0
	}
	return int(le.Uint16(raw[6:]))
}

// DataSize returns the bytes of records written so far.
func (w *Writer) DataSize() int64 { return w.dataSize }

// dataSizeOffset is where the header keeps the data section's size,
// after magic, size, attr_size and the attrs section.
const dataSizeOffset = 48

// Flush writes buffered records to the underlying writer and, when it is
// an io.WriterAt (a file), records their size in the header: Linux perf
// refuses a file whose header says the data is empty, as a writer killed
// before Close leaves it, so each Flush makes the file readable by perf up
// to here. The feature bitmap stays empty until Close, so such a file
// never claims feature sections it does not have.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if w.err = w.bw.Flush(); w.err != nil {
		return w.err
	}
	if at, ok := w.w.(io.WriterAt); ok && !w.pipe && !w.closed {
		_, w.err = at.WriteAt(le.AppendUint64(nil, uint64(w.dataSize)), dataSizeOffset)
	}
	return w.err
}

// Close writes the feature sections and the final header. It does not
// close the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.Features.swap {
		w.Features.toLittleEndian()
	}
	if w.pipe {
		w.sendFeatures()
		w.sendEventTypes()
		if w.err == nil {
			w.err = w.bw.Flush()
		}
		if w.err != nil {
			return fmt.Errorf("perf.data writer: %w", w.err)
		}
		return nil
	}
	feats := w.Features.List()
	var bitmap [4]uint64
	for _, f := range feats {
		if f <= 0 || f >= NumFeatures {
			return fmt.Errorf("perf.data writer: feature bit %d is outside 1..%d", f, NumFeatures-1)
		}
		bitmap[f/64] |= 1 << (uint(f) % 64)
	}
	// Feature section headers right after the data, in bit order, then
	// the contents.
	hdrOff := w.dataOff + w.dataSize
	contentOff := hdrOff + int64(len(feats))*sectionSz
	var hdrs, contents []byte
	for _, f := range feats {
		raw := w.Features.raw[f]
		hdrs = le.AppendUint64(hdrs, uint64(contentOff)+uint64(len(contents)))
		hdrs = le.AppendUint64(hdrs, uint64(len(raw)))
		contents = append(contents, raw...)
	}
	w.write(hdrs)
	w.write(contents)
	var eventTypes section
	if len(w.EventTypes) > 0 || w.EventTypesFrom != nil {
		end := contentOff + int64(len(contents))
		pad := -end & 7
		w.write(make([]byte, pad))
		n := int64(len(w.EventTypes))
		w.write(w.EventTypes)
		if w.EventTypesFrom != nil && w.err == nil {
			cw := &countWriter{w: writerFunc(func(b []byte) (int, error) {
				w.write(b)
				if w.err != nil {
					return 0, w.err
				}
				return len(b), nil
			})}
			if err := w.EventTypesFrom(cw); err != nil && w.err == nil {
				w.err = fmt.Errorf("event types: %w", err)
			}
			n += cw.n
		}
		eventTypes = section{uint64(end + pad), uint64(n)}
	}
	if w.err == nil {
		w.err = w.bw.Flush()
	}
	if w.err != nil {
		return fmt.Errorf("perf.data writer: %w", w.err)
	}
	attrsOff := w.dataOff - int64(len(w.attrs)*(w.attrSize+sectionSz))
	hdr := w.header(section{uint64(attrsOff), uint64(len(w.attrs) * (w.attrSize + sectionSz))}, eventTypes, bitmap)
	if _, err := w.w.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("perf.data writer: %w", err)
	}
	if _, err := w.w.Write(hdr); err != nil {
		return fmt.Errorf("perf.data writer: header: %w", err)
	}
	size, err := w.w.Seek(0, io.SeekEnd)
	w.size = size
	return err
}

// Size is the size of the file, or of the stream, Close completed.
func (w *Writer) Size() int64 {
	if w.pipe {
		return w.count.n
	}
	return w.size
}

// countWriter counts what reaches w.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// NewPipeWriter starts perf's pipe mode (perf record -o -) on w: a stream
// read front to back, which needs no seeking. The attrs go first, as
// HEADER_ATTR records; the Features set before the first data record
// follow them, the others come last, at Close. A feature travels as a
// HEADER_FEATURE record, the BUILD_ID list as a HEADER_BUILD_ID record
// per image and TRACING_DATA as a TRACING_DATA record and its payload,
// as perf writes them. A record holds at most 64 KiB: Close fails on a
// bigger feature, after writing all the others.
func NewPipeWriter(w io.Writer, attrs []*Attr) (*Writer, error) {
	if len(attrs) == 0 {
		return nil, errors.New("perf.data writer: at least one attr is needed")
	}
	count := &countWriter{w: w}
	wr := &Writer{pipe: true, attrs: attrs, bw: bufio.NewWriterSize(count, writeBuffer), sent: map[Feature]bool{}, count: count}
	wr.write(le.AppendUint64(le.AppendUint64(nil, magicLE), pipeHeaderSz))
	for _, a := range attrs {
		var err error
		if wr.buf, err = AppendRecord(wr.buf[:0], &HeaderAttr{EventAttr: a}); err != nil {
			return nil, fmt.Errorf("perf.data writer: %w", err)
		}
		wr.write(wr.buf)
	}
	if wr.err == nil {
		wr.err = wr.bw.Flush()
	}
	if wr.err != nil {
		return nil, fmt.Errorf("perf.data writer: %w", wr.err)
	}
	return wr, nil
}

// maxRecord is the most a record's u16 size can say.
const maxRecord = 1<<16 - 1

// sendEventTypes writes, in pipe mode, EventTypes (or what
// EventTypesFrom writes) as HEADER_EVENT_TYPE records whose bodies are
// multiples of 8 bytes.
func (w *Writer) sendEventTypes() {
	r := &eventTypeRecords{w: w}
	r.Write(w.EventTypes)
	if w.EventTypesFrom != nil && w.err == nil {
		if err := w.EventTypesFrom(r); err != nil && w.err == nil {
			w.err = fmt.Errorf("event types: %w", err)
		}
	}
	r.flush()
}

// eventTypeRecords cuts what is written to it into HEADER_EVENT_TYPE
// records of the most a record holds.
type eventTypeRecords struct {
	w   *Writer
	buf []byte
	rec []byte
}

const eventTypeMost = (maxRecord - 8) &^ 7

func (r *eventTypeRecords) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 && r.w.err == nil {
		k := min(len(b), eventTypeMost-len(r.buf))
		r.buf = append(r.buf, b[:k]...)
		b = b[k:]
		if len(r.buf) == eventTypeMost {
			r.flush()
		}
	}
	if r.w.err != nil {
		return 0, r.w.err
	}
	return n, nil
}

// flush writes what is buffered as one record, padded to 8 bytes.
func (r *eventTypeRecords) flush() {
	if len(r.buf) == 0 || r.w.err != nil {
		return
	}
	if pad := -len(r.buf) & 7; pad > 0 {
		r.buf = append(r.buf, make([]byte, pad)...)
	}
	r.rec, r.w.err = AppendRecord(r.rec[:0], &HeaderEventType{Data: r.buf})
	r.w.write(r.rec)
	r.buf = r.buf[:0]
}

// sendFeatures writes, in pipe mode, the features not yet in the stream.
func (w *Writer) sendFeatures() {
	// Not w.buf: WriteRecord's record, about to be written, is in it.
	var rec []byte
	var tooBig error
	defer func() {
		if w.err == nil {
			w.err = tooBig
		}
	}()
	for _, f := range w.Features.List() {
		if w.sent[f] || w.err != nil {
			continue
		}
		w.sent[f] = true
		raw := w.Features.raw[f]
		switch f {
		case FeatBuildID:
			ids, err := w.Features.BuildIDs()
			if err != nil {
				w.err = fmt.Errorf("feature BUILD_ID: %w", err)
				return
			}
			for i := range ids {
				rec, w.err = AppendRecord(rec[:0], &HeaderBuildID{BuildID: ids[i]})
				w.write(rec)
			}
		case FeatTracingData:
			// The record says the payload's size, padded to 8 bytes;
			// the payload follows it.
			n := (len(raw) + 7) &^ 7
			rec = le.AppendUint32(rec[:0], uint32(RecordTracingData))
			rec = le.AppendUint16(le.AppendUint16(rec, 0), 16)
			rec = le.AppendUint32(le.AppendUint32(rec, uint32(n)), 0)
			w.write(rec)
			w.write(raw)
			w.write(make([]byte, n-len(raw)))
		default:
			if 16+len(raw) > maxRecord {
				tooBig = errors.Join(tooBig, fmt.Errorf("feature %v of %d bytes does not fit a pipe-mode record (%d bytes at most)", f, len(raw), maxRecord-16))
				continue
			}
			rec, w.err = AppendRecord(rec[:0], &HeaderFeature{Feature: f, Data: raw})
			w.write(rec)
		}
	}
}
