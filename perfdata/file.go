package perfdata

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"

	"golang.org/x/sys/unix"
)

// Sentinel errors callers branch on.
var (
	ErrBadMagic  = errors.New("not a perf.data file (bad magic)")
	ErrNoFeature = errors.New("feature not present")
)

const (
	magicLE      = 0x32454c4946524550 // "PERFILE2" read little-endian
	magicSwapped = 0x50455246494c4532
	magicV1      = 0x454c494646524550 // "PERFFILE", before 2.6.34
	fileHeaderSz = 104
	pipeHeaderSz = 16
	sectionSz    = 16
)

// File is an open perf.data file or pipe-mode stream.
type File struct {
	// Attrs are the events of the recording, in file order. In pipe mode
	// they grow as the Reader meets HEADER_ATTR records.
	Attrs []*Attr
	// Features are the feature sections (in pipe mode, filled by the
	// Reader as it meets HEADER_FEATURE records).
	Features Features
	// EventTypes is the header's event_types section, which perf has
	// ignored since Linux 3.x (and zeroes when it rewrites a file): in
	// pipe mode, the bodies of the HEADER_EVENT_TYPE records, which perf
	// skips, in stream order, as the Reader meets them. jitprof keeps its
	// own data there (internal/jitbundle); see Writer.EventTypes.
	EventTypes []byte
	// Pipe is set for perf's pipe mode read as a stream, once.
	Pipe bool
	// PipeLayout is set for perf's pipe mode saved to a file (perf record
	// -o - > FILE): the data section runs from the 16-byte header to the
	// last whole record, and the attrs and features, which the stream
	// carries in records, were read from them when the file was opened.
	// Such a file is read as any other: in parts, more than once. Its
	// records' offsets are in the file: perf counts a stream's from the
	// end of its header, DataOffset bytes less.
	PipeLayout bool
	// Swapped is set for a file written on a machine of the other byte
	// order.
	Swapped bool
	// DataOffset and DataSize locate the data section (file mode).
	DataOffset, DataSize int64
	// Truncated is set when the header's data size is 0, as a killed
	// perf record leaves it: the data runs to the end of the file and the
	// features are lost.
	Truncated bool

	data     []byte   // the mapped or read file; nil in pipe mode
	fd       *os.File // the mapped file, for Sequential Readers; nil if not mapped
	stream   *bufio.Reader
	unmap    func() error
	warnings []string

	ids          map[uint64]*Attr
	idList       []idAttr // the same, for the few-ids case a scan beats a map
	idPos, isPos int
	idSize       int // the sample_id trailer's size when every attr gives it one; -1 if not
}

// Warnings returns the problems met that did not stop reading: a killed
// recording, a torn final record.
func (f *File) Warnings() []string { return f.warnings }

func (f *File) warn(format string, args ...any) {
	f.warnings = append(f.warnings, fmt.Sprintf(format, args...))
}

// Open opens a perf.data file, mapping it into memory; a file of perf's
// pipe mode is read as a file too (PipeLayout). A path of "-" is standard
// input, which is mapped when it is a file and read as a pipe-mode stream
// otherwise, as a FIFO is.
func Open(path string) (*File, error) {
	if path == "-" {
		// Standard input stays open for the rest of the program.
		return openFD(os.Stdin, "standard input", func() error { return nil })
	}
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return OpenFile(fd, path)
}

// OpenFile opens the recording in fd, an open file or pipe, named path in
// errors, as Open does; the File owns fd.
func OpenFile(fd *os.File, path string) (*File, error) {
	return openFD(fd, path, fd.Close)
}

// openFD opens the recording fd holds, named path in errors; closeFD
// closes fd.
func openFD(fd *os.File, path string, closeFD func() error) (*File, error) {
	st, err := fd.Stat()
	if err != nil {
		closeFD()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f, err := NewStream(fd)
		if err != nil {
			closeFD()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		f.unmap = closeFD
		return f, nil
	}
	if st.Size() == 0 {
		closeFD()
		return nil, fmt.Errorf("%s: empty file: %w", path, ErrBadMagic)
	}
	data, err := unix.Mmap(int(fd.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		closeFD()
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	f, err := Parse(data)
	if err != nil {
		unix.Munmap(data)
		closeFD()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// The descriptor stays open for Readers that copy (Sequential).
	f.fd = fd
	f.unmap = func() error {
		err := unix.Munmap(data)
		if cerr := closeFD(); err == nil {
			err = cerr
		}
		return err
	}
	return f, nil
}

// Close releases the file's mapping. Records and slices read from it are
// invalid afterwards.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	err := f.unmap()
	f.unmap = nil
	return err
}

// Parse reads the header, attrs and features of a perf.data file held in
// memory. The File aliases data.
func Parse(data []byte) (*File, error) {
	f := &File{data: data}
	if len(data) < 16 {
		return nil, fmt.Errorf("file of %d bytes is shorter than a header: %w", len(data), ErrBadMagic)
	}
	if err := f.checkMagic(binary.LittleEndian.Uint64(data)); err != nil {
		return nil, err
	}
	d := dec{b: data, off: 8, swap: f.Swapped}
	hsize := d.u64()
	if hsize == pipeHeaderSz {
		return f, f.readPipeLayout()
	}
	if hsize != fileHeaderSz {
		return nil, fmt.Errorf("header size %d at offset 8, want %d", hsize, fileHeaderSz)
	}
	if len(data) < fileHeaderSz {
		return nil, fmt.Errorf("file of %d bytes is shorter than its %d-byte header", len(data), fileHeaderSz)
	}
	attrSize := d.u64()
	attrs := readSection(&d)
	dataSec := readSection(&d)
	eventTypes := readSection(&d)
	var bitmap [4]uint64
	for i := range bitmap {
		bitmap[i] = d.u64()
	}

	if err := f.readAttrs(attrSize, attrs); err != nil {
		return nil, err
	}
	if dataSec.off > uint64(len(data)) {
		return nil, fmt.Errorf("data section at offset %d is past the end of the %d-byte file", dataSec.off, len(data))
	}
	f.DataOffset = int64(dataSec.off)
	switch {
	case dataSec.size == 0 && !f.emptyDataThenFeatures(bitmap, dataSec.off):
		f.Truncated = true
		f.DataSize = int64(len(data)) - f.DataOffset
		f.warn("the header's data size is 0: was 'perf record' properly terminated? reading to the last whole record; features are lost")
	case dataSec.size > uint64(len(data))-dataSec.off:
		return nil, fmt.Errorf("data section [%d, +%d) runs past the end of the %d-byte file", dataSec.off, dataSec.size, len(data))
	default:
		f.DataSize = int64(dataSec.size)
		if err := f.readFeatures(bitmap, dataSec.off+dataSec.size); err != nil {
			return nil, err
		}
	}
	switch {
	case eventTypes.size == 0:
	case eventTypes.off > uint64(len(data)) || eventTypes.size > uint64(len(data))-eventTypes.off:
		// perf ignores the section; so do we, saying so.
		f.warn("the event_types section [%d, +%d) runs past the end of the %d-byte file; ignored", eventTypes.off, eventTypes.size, len(data))
	default:
		f.EventTypes = data[eventTypes.off : eventTypes.off+eventTypes.size : eventTypes.off+eventTypes.size]
	}
	f.indexAttrs()
	return f, nil
}

// emptyDataThenFeatures tells a finished recording without records from a
// killed one, whose header also says the data is empty: in a finished one
// the feature section headers sit at the data offset and the first of them
// points right past them, which record bytes are most unlikely to do.
func (f *File) emptyDataThenFeatures(bitmap [4]uint64, at uint64) bool {
	n := 0
	for _, w := range bitmap {
		n += bits.OnesCount64(w)
	}
	if n == 0 {
		return at == uint64(len(f.data))
	}
	end := at + uint64(n)*sectionSz
	if end > uint64(len(f.data)) {
		return false
	}
	d := dec{b: f.data, off: int(at), swap: f.Swapped}
	return readSection(&d).off == end
}

func (f *File) checkMagic(m uint64) error {
	switch m {
	case magicLE:
	case magicSwapped:
		f.Swapped = true
	case magicV1, bits.ReverseBytes64(magicV1):
		return fmt.Errorf("perf.data version 1 (PERFFILE, Linux before 2.6.34) is not supported: %w", ErrBadMagic)
	default:
		// Never the bytes themselves: -i may name, through a user's
		// symlink, a file root alone may read.
		return ErrBadMagic
	}
	return nil
}

type section struct{ off, size uint64 }

func readSection(d *dec) section { return section{d.u64(), d.u64()} }

func (f *File) readAttrs(attrSize uint64, s section) error {
	data := f.data
	if attrSize < AttrSizeVer0+sectionSz || attrSize > attrSizeMax+sectionSz || attrSize%8 != 0 {
		return fmt.Errorf("attr size %d at offset 16 is not one perf writes (%d..%d, a multiple of 8)", attrSize, AttrSizeVer0+sectionSz, attrSizeMax+sectionSz)
	}
	if s.off > uint64(len(data)) || s.size > uint64(len(data))-s.off {
		return fmt.Errorf("attr section [%d, +%d) runs past the end of the %d-byte file", s.off, s.size, len(data))
	}
	if s.size%attrSize != 0 {
		return fmt.Errorf("attr section of %d bytes is not a multiple of the attr size %d", s.size, attrSize)
	}
	for off := s.off; off < s.off+s.size; off += attrSize {
		raw := data[off : off+attrSize]
		a, err := decodeAttr(raw[:attrSize-sectionSz], f.Swapped)
		if err != nil {
			return fmt.Errorf("attr at offset %d: %w", off, err)
		}
		if a.Size != 0 && uint64(a.Size) > attrSize-sectionSz {
			return fmt.Errorf("attr at offset %d: size field %d exceeds the file's attr size %d", off, a.Size, attrSize-sectionSz)
		}
		if a.Size == 0 {
			a.Size = uint32(attrSize - sectionSz)
		}
		d := dec{b: raw[attrSize-sectionSz:], swap: f.Swapped}
		ids := readSection(&d)
		if ids.off > uint64(len(data)) || ids.size > uint64(len(data))-ids.off || ids.size%8 != 0 {
			return fmt.Errorf("attr at offset %d: id array [%d, +%d) is outside the %d-byte file or not whole u64s", off, ids.off, ids.size, len(data))
		}
		idd := dec{b: data[ids.off : ids.off+ids.size], swap: f.Swapped}
		a.IDs = idd.u64s(nil, ids.size/8)
		f.Attrs = append(f.Attrs, &a)
	}
	return nil
}

func (f *File) readFeatures(bitmap [4]uint64, at uint64) error {
	n := 0
	for _, w := range bitmap {
		n += bits.OnesCount64(w)
	}
	if n == 0 {
		return nil
	}
	data := f.data
	if at > uint64(len(data)) || uint64(n)*sectionSz > uint64(len(data))-at {
		return fmt.Errorf("%d feature section headers at offset %d run past the end of the %d-byte file", n, at, len(data))
	}
	f.Features.swap = f.Swapped
	f.Features.raw = make(map[Feature][]byte, n)
	d := dec{b: data, off: int(at), swap: f.Swapped}
	for bit := 0; bit < NumFeatures; bit++ {
		if bitmap[bit/64]&(1<<(bit%64)) == 0 {
			continue
		}
		hdrOff := d.off
		s := readSection(&d)
		if s.off > uint64(len(data)) || s.size > uint64(len(data))-s.off {
			return fmt.Errorf("feature %v: section [%d, +%d) (header at offset %d) runs past the end of the %d-byte file", Feature(bit), s.off, s.size, hdrOff, len(data))
		}
		f.Features.raw[Feature(bit)] = append([]byte(nil), data[s.off:s.off+s.size]...)
	}
	if descs, err := f.Features.EventDescs(); err == nil {
		f.nameAttrs(descs)
	}
	return nil
}

// nameAttrs gives attrs their names from EVENT_DESC, matched by the
// first id, or by position when the descriptions have no ids.
func (f *File) nameAttrs(descs []EventDesc) {
	for i, d := range descs {
		if len(d.IDs) == 0 {
			if i < len(f.Attrs) {
				f.Attrs[i].Name = d.Name
			}
			continue
		}
		for _, a := range f.Attrs {
			if len(a.IDs) > 0 && a.IDs[0] == d.IDs[0] {
				a.Name = d.Name
			}
		}
	}
}

// indexAttrs builds the id → attr table and the id positions used to find
// a record's attr, as perf does: all attrs must agree on where the id is.
func (f *File) indexAttrs() {
	f.ids = make(map[uint64]*Attr)
	f.idList = f.idList[:0]
	for _, a := range f.Attrs {
		for _, id := range a.IDs {
			f.ids[id] = a
			f.idList = append(f.idList, idAttr{id, a})
		}
	}
	if len(f.idList) > maxIDScan {
		f.idList = nil
	}
	f.idPos, f.isPos, f.idSize = -1, -1, -1
	if len(f.Attrs) > 0 {
		f.idPos = idPos(f.Attrs[0].SampleType)
		f.isPos = isPos(f.Attrs[0].SampleType)
		f.idSize = f.Attrs[0].sampleIDSize()
		for _, a := range f.Attrs[1:] {
			if a.sampleIDSize() != f.idSize {
				f.idSize = -1
				break
			}
		}
	}
}

// AttrByID returns the attr of a sample id, or nil.
func (f *File) AttrByID(id uint64) *Attr {
	if f.idList != nil {
		for _, e := range f.idList {
			if e.id == id {
				return e.attr
			}
		}
		return nil
	}
	return f.ids[id]
}

type idAttr struct {
	id   uint64
	attr *Attr
}

// maxIDScan is how many ids a linear scan beats a map lookup for: a
// recording has an id per event and CPU, so usually a handful, and the
// lookup runs once per record.
const maxIDScan = 16

// NewStream reads perf's pipe mode (perf record -o -) from r.
func NewStream(r io.Reader) (*File, error) {
	// A pipe holds 64 KiB; a bigger buffer reads no faster, and
	// zeroing one per stream is what FuzzRead spent its time on.
	br := bufio.NewReaderSize(r, 64<<10)
	hdr := make([]byte, pipeHeaderSz)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, fmt.Errorf("reading the pipe header: %w", err)
	}
	f := &File{Pipe: true, stream: br}
	if err := f.checkMagic(binary.LittleEndian.Uint64(hdr)); err != nil {
		return nil, err
	}
	d := dec{b: hdr, off: 8, swap: f.Swapped}
	if size := d.u64(); size != pipeHeaderSz {
		return nil, fmt.Errorf("pipe header size %d at offset 8, want %d", size, pipeHeaderSz)
	}
	f.Features.swap = f.Swapped
	f.indexAttrs()
	return f, nil
}

// readPipeLayout makes f, the data of perf's pipe mode saved to a file,
// a File like any other: it reads the records that carry what a file's
// header holds (attrs, features, build-ids, tracing data), which may
// come anywhere in the stream, hopping over the others, and ends the
// data at the last whole record.
func (f *File) readPipeLayout() error {
	f.PipeLayout = true
	f.DataOffset = pipeHeaderSz
	f.DataSize = int64(len(f.data)) - pipeHeaderSz
	f.Features.swap = f.Swapped
	f.indexAttrs()
	r := f.Records()
	r.collect = true
	for !r.done {
		for r.end-r.off >= 8 {
			typ, size := f.header(r.off)
			if typ.IsUser() || size < 8 || size > r.end-r.off {
				break // Next reads it, or says what is wrong with it
			}
			r.off += size
		}
		if !r.Next() {
			break
		}
	}
	if r.err != nil {
		return r.err
	}
	if r.tornAt >= 0 {
		f.DataSize = r.tornAt - f.DataOffset
	}
	return nil
}
