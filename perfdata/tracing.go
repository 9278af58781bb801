package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// TracingData is the TRACING_DATA feature: what perf needs to decode the
// raw fields of tracepoint samples, and without which it refuses a
// recording of tracepoints. It holds tracefs's files as they were, laid
// out as perf's trace-event-info.c writes them (version 0.6).
type TracingData struct {
	Version     string // "0.6"; "0.5" has no SavedCmdline
	BigEndian   bool   // of the numbers in the section and in the raw data
	LongSize    uint8
	PageSize    uint32
	HeaderPage  []byte // events/header_page
	HeaderEvent []byte // events/header_event
	// Ftrace are the format files of the ftrace events recorded
	// (events/ftrace/NAME/format).
	Ftrace [][]byte
	// Systems are the format files of the other tracepoints recorded,
	// by subsystem.
	Systems      []TraceSystem
	Kallsyms     []byte // perf leaves it empty
	Printk       []byte // printk_formats
	SavedCmdline []byte // saved_cmdlines; perf leaves it empty
}

// TraceSystem is one tracepoint subsystem's format files.
type TraceSystem struct {
	Name    string
	Formats [][]byte // events/NAME/EVENT/format
}

// tracingMagic starts the section: \027\010D, then "tracing".
const tracingMagic = "\x17\x08Dtracing"

// TracingData parses the TRACING_DATA feature.
func (fs *Features) TracingData() (*TracingData, error) {
	b, ok := fs.raw[FeatTracingData]
	if !ok {
		return nil, fmt.Errorf("feature TRACING_DATA: %w", ErrNoFeature)
	}
	t, err := parseTracingData(b)
	if err != nil {
		return nil, fmt.Errorf("feature TRACING_DATA: %w", err)
	}
	return t, nil
}

// SetTracingData sets the TRACING_DATA feature.
func (fs *Features) SetTracingData(t *TracingData) {
	fs.SetRaw(FeatTracingData, AppendTracingData(nil, t))
}

func parseTracingData(b []byte) (*TracingData, error) {
	if !bytes.HasPrefix(b, []byte(tracingMagic)) {
		return nil, fmt.Errorf("no tracing magic at the start")
	}
	rest := b[len(tracingMagic):]
	nul := bytes.IndexByte(rest, 0)
	if nul < 0 || nul > 16 {
		return nil, fmt.Errorf("no version string after the magic")
	}
	t := &TracingData{Version: string(rest[:nul])}
	if t.Version != "0.5" && t.Version != "0.6" {
		return nil, errors.New("an unknown version, not 0.5 or 0.6")
	}
	off := len(tracingMagic) + nul + 1
	if len(b) < off+6 {
		return nil, fmt.Errorf("the section ends in its header")
	}
	t.BigEndian, t.LongSize = b[off] != 0, b[off+1]
	d := dec{b: b, off: off + 2, swap: t.BigEndian}
	t.PageSize = d.u32()
	var err error
	if t.HeaderPage, err = tracingFile(&d, "header_page"); err != nil {
		return nil, err
	}
	if t.HeaderEvent, err = tracingFile(&d, "header_event"); err != nil {
		return nil, err
	}
	if t.Ftrace, err = tracingFiles(&d, "ftrace"); err != nil {
		return nil, err
	}
	n := d.u32()
	if d.short || uint64(n) > uint64(len(d.b)-d.off)/5 { // a name's NUL and a count, at least
		return nil, fmt.Errorf("%d event systems at offset %d run past the section's %d bytes", n, d.off, len(b))
	}
	for range n {
		nul := bytes.IndexByte(d.b[d.off:], 0)
		if nul < 0 {
			return nil, fmt.Errorf("event system name at offset %d has no end", d.off)
		}
		s := TraceSystem{Name: string(d.b[d.off : d.off+nul])}
		d.off += nul + 1
		if s.Formats, err = tracingFiles(&d, "system "+s.Name); err != nil {
			return nil, err
		}
		t.Systems = append(t.Systems, s)
	}
	if t.Kallsyms, err = tracingBlob(&d, "kallsyms", uint64(d.u32())); err != nil {
		return nil, err
	}
	if t.Printk, err = tracingBlob(&d, "printk formats", uint64(d.u32())); err != nil {
		return nil, err
	}
	if t.Version != "0.5" {
		if t.SavedCmdline, err = tracingBlob(&d, "saved cmdlines", d.u64()); err != nil {
			return nil, err
		}
	}
	// A stream pads the section to 8 bytes with zeros.
	if rest := b[d.off:]; len(rest) >= 8 || len(bytes.Trim(rest, "\x00")) > 0 {
		return nil, fmt.Errorf("%d bytes after the last part", len(rest))
	}
	return t, nil
}

// tracingFile reads a named file: its NUL-terminated name, u64 size, bytes.
func tracingFile(d *dec, name string) ([]byte, error) {
	if !bytes.HasPrefix(d.b[d.off:], append([]byte(name), 0)) {
		return nil, fmt.Errorf("no %s at offset %d", name, d.off)
	}
	d.off += len(name) + 1
	return tracingBlob(d, name, d.u64())
}

// tracingFiles reads a u32 count of files, each a u64 size and bytes.
func tracingFiles(d *dec, what string) ([][]byte, error) {
	n := d.u32()
	if d.short || uint64(n) > uint64(len(d.b)-d.off)/8 {
		return nil, fmt.Errorf("%s: %d formats at offset %d run past the section's %d bytes", what, n, d.off, len(d.b))
	}
	var out [][]byte
	for i := range n {
		f, err := tracingBlob(d, fmt.Sprintf("%s: format %d", what, i), d.u64())
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// tracingBlob reads n bytes, whose size was just read.
func tracingBlob(d *dec, what string, n uint64) ([]byte, error) {
	if d.short || n > uint64(len(d.b)-d.off) {
		return nil, fmt.Errorf("%s of %d bytes at offset %d runs past the section's %d bytes", what, n, d.off, len(d.b))
	}
	if n == 0 {
		return nil, nil
	}
	return bytes.Clone(d.bytes(n)), nil
}

// AppendTracingData appends the TRACING_DATA section of t to dst.
func AppendTracingData(dst []byte, t *TracingData) []byte {
	var bo binary.AppendByteOrder = binary.LittleEndian
	big := byte(0)
	if t.BigEndian {
		bo, big = binary.BigEndian, 1
	}
	dst = append(dst, tracingMagic...)
	dst = append(append(dst, t.Version...), 0)
	dst = append(dst, big, t.LongSize)
	dst = bo.AppendUint32(dst, t.PageSize)
	for _, f := range []struct {
		name string
		b    []byte
	}{{"header_page", t.HeaderPage}, {"header_event", t.HeaderEvent}} {
		dst = append(append(dst, f.name...), 0)
		dst = append(bo.AppendUint64(dst, uint64(len(f.b))), f.b...)
	}
	files := func(l [][]byte) {
		dst = bo.AppendUint32(dst, uint32(len(l)))
		for _, f := range l {
			dst = append(bo.AppendUint64(dst, uint64(len(f))), f...)
		}
	}
	files(t.Ftrace)
	dst = bo.AppendUint32(dst, uint32(len(t.Systems)))
	for _, s := range t.Systems {
		dst = append(append(dst, s.Name...), 0)
		files(s.Formats)
	}
	dst = append(bo.AppendUint32(dst, uint32(len(t.Kallsyms))), t.Kallsyms...)
	dst = append(bo.AppendUint32(dst, uint32(len(t.Printk))), t.Printk...)
	if t.Version != "0.5" {
		dst = append(bo.AppendUint64(dst, uint64(len(t.SavedCmdline))), t.SavedCmdline...)
	}
	return dst
}
