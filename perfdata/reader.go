package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync"
)

// Reader iterates over the records of a File, scanner-style:
//
//	r := f.Records()
//	for r.Next() {
//		switch rec := r.Record().(type) { ... }
//	}
//	if err := r.Err(); err != nil { ... }
//
// It keeps one value per record type and reuses it, so reading does not
// allocate per record; a record is valid until the next call to Next.
type Reader struct {
	// SkipCallchains leaves Sample.Callchain empty, for readers that need
	// only the sampled address: copying the chains is most of the cost of
	// decoding a -g recording.
	SkipCallchains bool
	// FixedSampleFields decodes of a SAMPLE only the fields before the
	// variable-length ones (IDENTIFIER through PERIOD), leaving the
	// others empty: what a flat profile needs, read at a third of the
	// cost of the whole record.
	FixedSampleFields bool
	// Sequential reads a mapped file's records by copying them into a
	// buffer of the Reader's own (pread) rather than through the
	// mapping: for one pass over much of a big file, copying costs a
	// fraction of the page faults of reading the mapping (a third of
	// the time on a 93 MB file in a VM, where a fault is dear), and the
	// pages are not charged to the process. A record, and every slice in
	// it, is then valid only until the next call to Next. Set it before
	// the first Next; it does nothing in pipe mode or for a File that
	// Parse made from memory.
	Sequential bool

	f    *File
	off  int64 // offset of the next record
	end  int64 // end of the data section; -1 in pipe mode
	stop int64 // RecordsUntil: no record starts at or after it; 0: none
	rec  Record
	err  error
	done bool
	// collect has the Reader fill in the File's attrs and features from
	// the records that carry them, and stop at a torn record with a
	// warning, noting it in tornAt (File.readPipeLayout).
	collect bool
	tornAt  int64
	buf     []byte // pipe mode: the current record
	pbuf    []byte // pipe mode: the payload following the current record
	size    int    // of the current record
	sink    byte   // see touchAhead
	win     []byte // Sequential: the file's bytes from winOff
	winOff  int64
	counts  [128]uint64
	// layout is the sample layout of the last SAMPLE's sample_type
	// (valid when hasLayout): recordings mostly have one.
	layout    sampleLayout
	hasLayout bool

	sample        Sample
	mmap          Mmap
	comm          Comm
	fork          Fork
	exit          Exit
	lost          Lost
	lostSamples   LostSamples
	throttle      Throttle
	sw            Switch
	ksymbol       Ksymbol
	bpf           BPFEvent
	cgroup        Cgroup
	namespaces    Namespaces
	textPoke      TextPoke
	read          Read
	aux           Aux
	itrace        ItraceStart
	hwid          AuxOutputHWID
	headerAttr    HeaderAttr
	headerBuildID HeaderBuildID
	round         FinishedRound
	finishedInit  FinishedInit
	idIndex       IDIndex
	timeConv      TimeConv
	feature       HeaderFeature
	eventType     HeaderEventType
	unknown       Unknown
}

// Records returns a Reader positioned at the first record. A File has one
// stream of records; in pipe mode it can be read only once.
func (f *File) Records() *Reader {
	r := &Reader{f: f, off: f.DataOffset, end: f.DataOffset + f.DataSize, tornAt: -1}
	if f.Pipe {
		// perf counts pipe-mode offsets from after the pipe header; so do
		// we, so that offsets match perf report -D.
		r.off, r.end = 0, -1
	}
	return r
}

// Record returns the current record.
func (r *Reader) Record() Record { return r.rec }

// Err returns the error that stopped the Reader, or nil at the end.
func (r *Reader) Err() error { return r.err }

// Offset returns the offset of the current record.
func (r *Reader) Offset() int64 { return r.rec.Base().Offset }

// Size returns the size in bytes of the current record, header included.
func (r *Reader) Size() int { return r.size }

// Count returns how many records of type t have been read so far.
func (r *Reader) Count(t RecordType) uint64 {
	if int(t) < len(r.counts) {
		return r.counts[t]
	}
	return 0
}

// Next advances to the next record and reports whether there is one.
func (r *Reader) Next() bool {
	if r.done {
		return false
	}
	off := r.off
	var raw []byte
	if r.f.Pipe {
		var err error
		raw, err = r.nextPipe()
		if err != nil {
			return r.fail(err)
		}
		if raw == nil {
			r.done = true
			return false
		}
	} else {
		left := r.end - off
		if left == 0 || r.stop != 0 && off >= r.stop {
			r.done = true
			r.releaseWindow()
			return false
		}
		if left < 8 {
			return r.torn(off, fmt.Sprintf("%d bytes are left, less than a record header", left))
		}
		var typ RecordType
		var size int64
		copying := r.Sequential && r.f.fd != nil
		if copying {
			h, err := r.window(off, 8)
			if err != nil {
				return r.fail(err)
			}
			typ, size = r.f.headerOf(h)
		} else {
			typ, size = r.f.header(off)
		}
		if size < 8 {
			return r.fail(fmt.Errorf("record at offset %d has size %d, less than its header", off, size))
		}
		if size > left {
			return r.torn(off, fmt.Sprintf("record of %d bytes runs past the end of the data section (%d bytes left)", size, left))
		}
		if copying {
			var err error
			if raw, err = r.window(off, size); err != nil {
				return r.fail(err)
			}
		} else {
			raw = r.f.data[off : off+size]
			r.touchAhead(off)
		}
		r.off = off + size
		if typ == RecordSample && r.FixedSampleFields {
			if s := r.fixedSample(raw, off); s != nil {
				r.size, r.rec = len(raw), s
				return true
			}
			// decode tells what is wrong with the record
		}
	}
	r.size = len(raw)
	rec, err := r.decode(raw, off)
	if err != nil {
		return r.fail(err)
	}
	if r.f.Pipe || rec.Type() != RecordAuxtrace && rec.Type() != RecordTracingData {
		r.rec = rec
		return true
	}
	// In file mode, these records' payloads follow them in the data.
	u := rec.(*Unknown)
	n, err := payloadSize(u, r.f.Swapped)
	if err != nil {
		return r.fail(fmt.Errorf("%v record at offset %d: %w", u.RecType, off, err))
	}
	if n > r.end-r.off {
		return r.torn(off, fmt.Sprintf("%v payload of %d bytes runs past the end of the data section", u.RecType, n))
	}
	u.Payload = r.f.data[r.off : r.off+n]
	r.off += n
	r.rec = rec
	if r.collect && u.RecType == RecordTracingData {
		if r.f.Features.raw == nil {
			r.f.Features.raw = map[Feature][]byte{}
		}
		r.f.Features.raw[FeatTracingData] = bytes.Clone(u.Payload)
	}
	return true
}

// touchAhead reads a byte of the file well ahead of off. Each record's
// size, in its header, tells where the next one is, so reading records
// is a chain of loads that the processor cannot start early; a load the
// chain does not wait for brings the bytes ahead into the cache while it
// works, which reads a big file a third faster.
func (r *Reader) touchAhead(off int64) {
	if ahead := off + touchDistance; ahead < r.end {
		r.sink += r.f.data[ahead]
	}
}

// touchDistance is how far ahead touchAhead reads: the gain levels off
// from about 1 KiB.
const touchDistance = 2048

// windowSize is how much a Sequential Reader copies at a time: big
// enough that the read calls cost little, small enough to stay in the
// processor's cache. A file of less than smallData gets a quarter of it:
// each page of a fresh buffer is a fault (14 µs in a VM), and a 256 KiB
// one was 64 of a small report's 900 faults, for reads it saves few
// calls on. A window holds at least a record (64 KiB).
const (
	windowSize = 256 << 10
	smallData  = 4 << 20
)

// windows are Sequential Readers' buffers, by size (windowSize/4 and
// windowSize), handed on when a Reader is done: a report reads a file
// with several Readers one after another (the parts, then the places
// read again), and each fresh buffer is pages to fault in.
var windows = [2]sync.Pool{
	{New: func() any { b := make([]byte, 0, windowSize/4); return &b }},
	{New: func() any { b := make([]byte, 0, windowSize); return &b }},
}

// windowPool is the pool of the buffers for reading f.
func windowPool(f *File) *sync.Pool {
	if f.DataSize < smallData {
		return &windows[0]
	}
	return &windows[1]
}

// releaseWindow hands the Reader's buffer on, when it has read to its
// end: a record's slices are good only until the next call to Next, and
// that call returned false. A Reader moved on with JumpTo takes another.
func (r *Reader) releaseWindow() {
	if r.win == nil {
		return
	}
	b := r.win[:0]
	windowPool(r.f).Put(&b)
	r.win, r.winOff = nil, 0
}

// window returns the n bytes of the file at off, from the Reader's
// buffer, reading the file from off into it when they are not all there.
// n is at most a record's size (64 KiB) and off+n within the data.
func (r *Reader) window(off, n int64) ([]byte, error) {
	if off >= r.winOff && off+n <= r.winOff+int64(len(r.win)) {
		return r.win[off-r.winOff : off-r.winOff+n], nil
	}
	if r.win == nil {
		r.win = *windowPool(r.f).Get().(*[]byte)
	}
	// Read no further than the data section's end, or the stop and a
	// record past it, whichever is nearer.
	want := min(int64(cap(r.win)), r.end-off)
	if r.stop != 0 {
		want = min(want, max(r.stop-off, 0)+1<<16)
	}
	want = max(want, n)
	buf := r.win[:want]
	got, err := r.f.fd.ReadAt(buf, off)
	if int64(got) < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		r.win = r.win[:0]
		return nil, fmt.Errorf("reading %d bytes at offset %d: %w (the file was cut short while being read)", n, off, err)
	}
	r.win, r.winOff = buf[:got], off
	return r.win[:n], nil
}

// header returns the type and size of the record whose header is at off
// in the mapped file; 8 bytes must be there.
func (f *File) header(off int64) (RecordType, int64) {
	return f.headerOf(f.data[off:])
}

// headerOf returns the type and size of the record header h starts with.
func (f *File) headerOf(h8 []byte) (RecordType, int64) {
	h := le.Uint64(h8)
	if f.Swapped {
		return RecordType(bits.ReverseBytes32(uint32(h))), int64(bits.ReverseBytes16(uint16(h >> 48)))
	}
	return RecordType(uint32(h)), int64(h >> 48)
}

// payloadSize is the size of the bytes that follow an AUXTRACE or
// TRACING_DATA record in the stream.
func payloadSize(u *Unknown, swap bool) (int64, error) {
	d := dec{b: u.Data, swap: swap}
	var n uint64
	if u.RecType == RecordAuxtrace {
		n = d.u64()
	} else {
		n = uint64(d.u32())
	}
	if d.short {
		return 0, errShort
	}
	if n > 1<<40 {
		return 0, fmt.Errorf("payload size %d is absurd", n)
	}
	return int64(n), nil
}

func (r *Reader) fail(err error) bool {
	r.err = err
	r.done = true
	r.rec = nil
	r.releaseWindow()
	return false
}

// torn ends reading at a partial record. In a file whose data size is
// known that is corruption; in a killed recording or a cut stream it is
// the expected end, and a warning.
func (r *Reader) torn(off int64, what string) bool {
	if r.f.Truncated || r.f.Pipe || r.collect {
		r.tornAt = off
		r.f.warn("record at offset %d: %s; ignoring it (the recording was cut short)", off, what)
		r.done = true
		r.rec = nil
		return false
	}
	return r.fail(fmt.Errorf("record at offset %d: %s", off, what))
}

func (r *Reader) nextPipe() ([]byte, error) {
	off := r.off
	hdr, err := r.f.stream.Peek(8)
	if len(hdr) == 0 && err == io.EOF {
		return nil, nil
	}
	if len(hdr) < 8 {
		r.torn(off, fmt.Sprintf("the stream ends %d bytes into a record header", len(hdr)))
		return nil, nil
	}
	d := dec{b: hdr, swap: r.f.Swapped}
	d.u32()
	d.u16()
	size := int(d.u16())
	if size < 8 {
		return nil, fmt.Errorf("record at offset %d has size %d, less than its header", off, size)
	}
	if cap(r.buf) < size {
		r.buf = make([]byte, size, 1<<16)
	}
	r.buf = r.buf[:size]
	if n, err := io.ReadFull(r.f.stream, r.buf); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			r.torn(off, fmt.Sprintf("the stream ends %d bytes into a %d-byte record", n, size))
			return nil, nil
		}
		return nil, fmt.Errorf("record at offset %d: %w", off, err)
	}
	r.off += int64(size)
	return r.buf, nil
}

// decode turns raw record bytes (header included) into a record value.
func (r *Reader) decode(raw []byte, off int64) (Record, error) {
	f := r.f
	d := dec{b: raw, swap: f.Swapped}
	typ := RecordType(d.u32())
	misc := d.u16()
	body := raw[8:]
	if int(typ) < len(r.counts) {
		r.counts[typ]++
	}
	var c *Common
	var rec Record
	var err error
	if typ.IsUser() {
		rec, err = r.decodeUser(typ, misc, body, off)
		if err != nil {
			return nil, fmt.Errorf("%v record at offset %d: %w", typ, off, err)
		}
		c = rec.Base()
		c.Misc, c.Offset, c.Attr = misc, off, nil
		return rec, nil
	}
	attr := r.attrFor(typ, body)
	if typ == RecordSample {
		s := &r.sample
		s.Common = Common{Misc: misc, Offset: off, Attr: attr}
		if attr == nil {
			return nil, fmt.Errorf("SAMPLE record at offset %d: the file has no attrs", off)
		}
		if err := decodeSample(s, body, r.layoutOf(attr.SampleType), f.Swapped, r.SkipCallchains); err != nil {
			return nil, fmt.Errorf("SAMPLE record at offset %d: %w", off, err)
		}
		return s, nil
	}
	rec = r.recordFor(typ)
	c = rec.Base()
	*c = Common{Misc: misc, Offset: off, Attr: attr}
	if attr != nil {
		if err := decodeSampleID(c, body, f.Swapped); err != nil {
			return nil, fmt.Errorf("%v record at offset %d: %w", typ, off, err)
		}
	}
	if err := decodeKernel(rec, typ, body, f.Swapped); err != nil {
		return nil, fmt.Errorf("%v record at offset %d: %w", typ, off, err)
	}
	return rec, nil
}

// attrFor finds the attr of a kernel record from the sample id in it.
func (r *Reader) attrFor(typ RecordType, body []byte) *Attr {
	f := r.f
	switch len(f.Attrs) {
	case 0:
		return nil
	case 1:
		return f.Attrs[0]
	}
	var pos int
	if typ == RecordSample {
		if f.idPos < 0 || (f.idPos+1)*8 > len(body) {
			return f.Attrs[0]
		}
		pos = f.idPos * 8
	} else {
		if f.isPos < 0 || f.Attrs[0].Flags&FlagSampleIDAll == 0 || f.isPos*8 > len(body) {
			return f.Attrs[0]
		}
		pos = len(body) - f.isPos*8
	}
	if pos+8 > len(body) {
		return f.Attrs[0]
	}
	// Read in place, not through a dec: this runs for every record, and
	// the decoder's state cost a flat report 4% of its time.
	id := le.Uint64(body[pos:])
	if f.Swapped {
		id = bits.ReverseBytes64(id)
	}
	if a := f.AttrByID(id); a != nil {
		return a
	}
	return f.Attrs[0]
}

func (r *Reader) recordFor(typ RecordType) Record {
	switch typ {
	case RecordMmap, RecordMmap2:
		r.mmap.Version2 = typ == RecordMmap2
		return &r.mmap
	case RecordComm:
		return &r.comm
	case RecordFork:
		return &r.fork
	case RecordExit:
		return &r.exit
	case RecordLost:
		return &r.lost
	case RecordLostSamples:
		return &r.lostSamples
	case RecordThrottle, RecordUnthrottle:
		r.throttle.Unthrottle = typ == RecordUnthrottle
		return &r.throttle
	case RecordSwitch, RecordSwitchCPUWide:
		r.sw.CPUWide = typ == RecordSwitchCPUWide
		return &r.sw
	case RecordKsymbol:
		return &r.ksymbol
	case RecordBPFEvent:
		return &r.bpf
	case RecordCgroup:
		return &r.cgroup
	case RecordNamespaces:
		return &r.namespaces
	case RecordTextPoke:
		return &r.textPoke
	case RecordRead:
		return &r.read
	case RecordAux:
		return &r.aux
	case RecordItraceStart:
		return &r.itrace
	case RecordAuxOutputHWID:
		return &r.hwid
	case RecordFinishedRound:
		return &r.round
	case RecordFinishedInit:
		return &r.finishedInit
	case RecordIDIndex:
		return &r.idIndex
	}
	r.unknown.RecType = typ
	return &r.unknown
}

// kernelBody returns the record body without its sample_id trailer.
func kernelBody(c *Common, body []byte) []byte {
	if c.Attr == nil {
		return body
	}
	n := c.Attr.sampleIDSize()
	if n > len(body) {
		return body[:0]
	}
	return body[:len(body)-n]
}

// decodeKernel decodes the body of a kernel record of type typ (the
// Reader's, from recordFor) by its layout (recordfields.go); one the
// table does not hold is kept as bytes.
func decodeKernel(rec Record, typ RecordType, body []byte, swap bool) error {
	if u, ok := rec.(*Unknown); ok {
		u.Data, u.Payload = body, nil
		return nil
	}
	d := dec{b: kernelBody(rec.Base(), body), swap: swap}
	return decodeFields(rec, typ, recLayouts[typ], &d)
}

func (c *Common) attrReadFormat() ReadFormat {
	if c.Attr == nil {
		return 0
	}
	return c.Attr.ReadFormat
}

// fills reports whether the attrs and features the Reader meets go into
// its File: always but in a PipeLayout file, whose were all read when it
// was opened, and which several Readers may read at once.
func (r *Reader) fills() bool { return !r.f.PipeLayout || r.collect }

func (r *Reader) decodeUser(typ RecordType, misc uint16, body []byte, off int64) (Record, error) {
	f := r.f
	d := dec{b: body, swap: f.Swapped}
	switch typ {
	case RecordHeaderAttr:
		if len(body) < AttrSizeVer0 {
			return nil, errShort
		}
		d.u32() // type
		size := int(d.u32())
		if size == 0 {
			size = AttrSizeVer0
		}
		if size < AttrSizeVer0 || size > len(body) || size%8 != 0 {
			return nil, fmt.Errorf("attr size %d in a %d-byte body", size, len(body))
		}
		a, err := decodeAttr(body[:size], f.Swapped)
		if err != nil {
			return nil, err
		}
		ids := dec{b: body[size:], swap: f.Swapped}
		a.IDs = ids.u64s(nil, uint64(len(body)-size)/8)
		if r.fills() {
			f.Attrs = append(f.Attrs, &a)
			f.indexAttrs()
			if descs, err := f.Features.EventDescs(); err == nil {
				f.nameAttrs(descs)
			}
		}
		r.headerAttr.EventAttr = &a
		return &r.headerAttr, nil
	case RecordHeaderBuildID:
		b, err := decodeBuildID(&d, misc)
		if err != nil {
			return nil, err
		}
		r.headerBuildID.BuildID = b
		if f.Pipe || r.collect {
			// A file keeps these records as its BUILD_ID feature;
			// a stream sends them one by one.
			var bo binary.AppendByteOrder = binary.LittleEndian
			if f.Swapped {
				bo = binary.BigEndian
			}
			if f.Features.raw == nil {
				f.Features.raw = map[Feature][]byte{}
			}
			raw := bo.AppendUint16(bo.AppendUint16(bo.AppendUint32(f.Features.raw[FeatBuildID], uint32(typ)), misc), uint16(8+len(body)))
			f.Features.raw[FeatBuildID] = append(raw, body...)
		}
		return &r.headerBuildID, nil
	case RecordHeaderEventType:
		r.eventType.Data = body
		if f.Pipe || r.collect {
			f.EventTypes = append(f.EventTypes, body...)
		}
		return &r.eventType, nil
	case RecordFinishedRound, RecordFinishedInit, RecordIDIndex:
		rec := r.recordFor(typ)
		if err := decodeFields(rec, typ, recLayouts[typ], &d); err != nil {
			return nil, err
		}
		return rec, nil
	case RecordTimeConv:
		t := &r.timeConv
		*t = TimeConv{TimeShift: d.u64(), TimeMult: d.u64(), TimeZero: d.u64()}
		if d.short {
			return nil, errShort
		}
		if len(body) >= 3*8+2*8+8 {
			t.Ext = true
			t.TimeCycles, t.TimeMask = d.u64(), d.u64()
			t.CapUserTimeZero = d.u8() != 0
			t.CapUserTimeShort = d.u8() != 0
		}
		return t, nil
	case RecordHeaderFeature:
		id := d.u64()
		if d.short {
			return nil, errShort
		}
		if id >= NumFeatures {
			return nil, fmt.Errorf("feature id %d is outside the %d-bit bitmap", id, NumFeatures)
		}
		r.feature.Feature = Feature(id)
		r.feature.Data = body[8:]
		if !r.fills() {
			return &r.feature, nil
		}
		if f.Features.raw == nil {
			f.Features.raw = map[Feature][]byte{}
		}
		f.Features.raw[Feature(id)] = append([]byte(nil), body[8:]...)
		if id == uint64(FeatEventDesc) {
			if descs, err := f.Features.EventDescs(); err == nil {
				f.nameAttrs(descs)
			}
		}
		return &r.feature, nil
	}
	u := &r.unknown
	u.RecType, u.Data, u.Payload = typ, body, nil
	if f.Pipe && (typ == RecordAuxtrace || typ == RecordTracingData) {
		n, err := payloadSize(u, f.Swapped)
		if err != nil {
			return nil, err
		}
		// Grow with the data actually read, so a corrupt size cannot make
		// us allocate what the stream does not hold.
		b, err := io.ReadAll(io.LimitReader(f.stream, n))
		if err != nil {
			return nil, fmt.Errorf("reading its %d-byte payload: %w", n, err)
		}
		if int64(len(b)) != n {
			return nil, fmt.Errorf("the stream ends %d bytes into its %d-byte payload", len(b), n)
		}
		r.off += n
		r.pbuf = b
		u.Payload = r.pbuf
		if typ == RecordTracingData {
			// What a file keeps as the feature comes as a payload in
			// a stream.
			if f.Features.raw == nil {
				f.Features.raw = map[Feature][]byte{}
			}
			f.Features.raw[FeatTracingData] = bytes.Clone(b)
		}
	}
	return u, nil
}

// layoutOf returns the sample layout of t.
func (r *Reader) layoutOf(t SampleFormat) *sampleLayout {
	if !r.hasLayout || r.layout.t != t {
		r.layout, r.hasLayout = layoutOf(t), true
	}
	return &r.layout
}

// fixedSample decodes the fixed fields of the SAMPLE raw at off for
// FixedSampleFields, or returns nil when the record is too short for
// them or the file is byte-swapped (which decode handles).
func (r *Reader) fixedSample(raw []byte, off int64) *Sample {
	f := r.f
	if f.Swapped || len(f.Attrs) == 0 {
		return nil
	}
	body := raw[8:]
	a := r.attrFor(RecordSample, body)
	l := r.layoutOf(a.SampleType)
	if l.fixed > len(body) {
		return nil
	}
	s := &r.sample
	s.Common = Common{Misc: le.Uint16(raw[4:]), Offset: off, Attr: a}
	decodeFixed(s, body, l, false)
	r.counts[RecordSample]++
	return s
}
