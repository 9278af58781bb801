package jitdump

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// Writer writes a jitdump that `perf inject --jit` accepts. Each record
// goes to the underlying writer in one Write call, so that a reader tailing
// the file sees whole records or a torn last one, never interleaved ones.
// A Writer is not safe for concurrent use.
type Writer struct {
	w     io.Writer
	order appendOrder
	n     int
	buf   []byte
}

// NewWriter writes the file header h to w. A nil h.ByteOrder means little
// endian (it must be an encoding/binary order), a zero h.Version means Version; h.Size is always HeaderSize.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	b, err := AppendHeader(nil, h)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(b); err != nil {
		return nil, fmt.Errorf("jitdump: header: %w", err)
	}
	o, _ := orderOf(h)
	return &Writer{w: w, order: o}, nil
}

// appendOrder is what binary.LittleEndian and binary.BigEndian both are.
type appendOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// orderOf returns h's byte order as one that appends.
func orderOf(h Header) (appendOrder, error) {
	if h.ByteOrder == nil {
		return binary.LittleEndian, nil
	}
	o, ok := h.ByteOrder.(appendOrder)
	if !ok {
		return nil, fmt.Errorf("jitdump: header: byte order %v cannot append", h.ByteOrder)
	}
	return o, nil
}

// AppendHeader appends the file header h to dst: in h.ByteOrder (nil is
// little endian), a zero h.Version meaning Version; h.Size is always
// HeaderSize.
func AppendHeader(dst []byte, h Header) ([]byte, error) {
	o, err := orderOf(h)
	if err != nil {
		return dst, err
	}
	if h.Version == 0 {
		h.Version = Version
	}
	dst = o.AppendUint32(dst, Magic)
	dst = o.AppendUint32(dst, h.Version)
	dst = o.AppendUint32(dst, HeaderSize)
	dst = o.AppendUint32(dst, h.ElfMach)
	dst = o.AppendUint32(dst, h.Pad1)
	dst = o.AppendUint32(dst, h.PID)
	dst = o.AppendUint64(dst, h.Timestamp)
	dst = o.AppendUint64(dst, h.Flags)
	return dst, nil
}

// Write appends one record. The record's Size and Offset are ignored; the
// size is computed. CodeLoad.Code must be CodeSize bytes, because perf
// reads CodeSize bytes after the name.
func (w *Writer) Write(rec Record) error {
	if r, ok := rec.(*CodeLoad); ok && uint64(len(r.Code)) != r.CodeSize {
		return fmt.Errorf("jitdump: writing record %d (%s): %d code bytes for code_size %d", w.n, rec.Header().Type, len(r.Code), r.CodeSize)
	}
	b, err := AppendRecord(w.buf[:0], w.order, rec)
	if err == nil {
		_, err = w.w.Write(b)
	}
	w.buf = b[:0]
	if err != nil {
		return fmt.Errorf("jitdump: writing record %d (%s): %w", w.n, rec.Header().Type, err)
	}
	w.n++
	return nil
}

// AppendRecord appends rec to dst in byte order order
// (binary.LittleEndian or binary.BigEndian), its total_size computed;
// its Size and Offset are ignored. A CodeLoad's Code is CodeSize bytes,
// or nil for CodeSize zero bytes (perf reads CodeSize bytes after the
// name, and names samples without them).
func AppendRecord(dst []byte, order binary.ByteOrder, rec Record) ([]byte, error) {
	o, err := orderOf(Header{ByteOrder: order})
	if err != nil {
		return dst, err
	}
	rh := rec.Header()
	start := len(dst)
	b := o.AppendUint32(dst, uint32(rh.Type))
	b = o.AppendUint32(b, 0) // total_size, set below
	b = o.AppendUint64(b, rh.Timestamp)
	switch r := rec.(type) {
	case *CodeLoad:
		if r.Code != nil && uint64(len(r.Code)) != r.CodeSize {
			err = fmt.Errorf("%d code bytes for code_size %d", len(r.Code), r.CodeSize)
			break
		}
		if r.Code == nil && r.CodeSize > 1<<32-1 {
			err = fmt.Errorf("code_size %d does not fit total_size", r.CodeSize)
			break
		}
		b = o.AppendUint32(b, r.PID)
		b = o.AppendUint32(b, r.TID)
		b = o.AppendUint64(b, r.VMA)
		b = o.AppendUint64(b, r.CodeAddr)
		b = o.AppendUint64(b, r.CodeSize)
		b = o.AppendUint64(b, r.CodeIndex)
		if b, err = appendCString(b, r.Name); err != nil {
			break
		}
		if r.Code != nil {
			b = append(b, r.Code...)
		} else {
			b = append(b, make([]byte, r.CodeSize)...)
		}
	case *CodeMove:
		b = o.AppendUint32(b, r.PID)
		b = o.AppendUint32(b, r.TID)
		b = o.AppendUint64(b, r.VMA)
		b = o.AppendUint64(b, r.OldCodeAddr)
		b = o.AppendUint64(b, r.NewCodeAddr)
		b = o.AppendUint64(b, r.CodeSize)
		b = o.AppendUint64(b, r.CodeIndex)
	case *DebugInfo:
		b = o.AppendUint64(b, r.CodeAddr)
		b = o.AppendUint64(b, uint64(len(r.Entries)))
		for i, e := range r.Entries {
			b = o.AppendUint64(b, e.Addr)
			b = o.AppendUint32(b, e.Line)
			b = o.AppendUint32(b, e.Discrim)
			// Names are written in full; "\xff" would be read as "same as
			// previous", so a real file of that name cannot be written.
			if e.File == "\xff" {
				err = fmt.Errorf("entry %d: file name \"\\xff\" is reserved", i)
				break
			}
			if b, err = appendCString(b, e.File); err != nil {
				err = fmt.Errorf("entry %d: %w", i, err)
				break
			}
		}
	case *CodeClose:
	case *UnwindingInfo:
		if r.EHFrameHdrSize > uint64(len(r.Data)) {
			err = fmt.Errorf("eh_frame_hdr_size %d exceeds %d bytes of data", r.EHFrameHdrSize, len(r.Data))
			break
		}
		b = o.AppendUint64(b, uint64(len(r.Data)))
		b = o.AppendUint64(b, r.EHFrameHdrSize)
		b = o.AppendUint64(b, r.MappedSize)
		b = append(b, r.Data...)
		// Pad to 8 bytes as perf's agent and V8 do.
		for (len(b)-start)%8 != 0 {
			b = append(b, 0)
		}
	case *Unknown:
		b = append(b, r.Data...)
	default:
		err = fmt.Errorf("unsupported record type %T", rec)
	}
	if err == nil && uint64(len(b)-start) > 1<<32-1 {
		err = fmt.Errorf("record of %d bytes does not fit total_size", len(b)-start)
	}
	if err != nil {
		return b[:start], err
	}
	o.PutUint32(b[start+4:], uint32(len(b)-start))
	return b, nil
}

func appendCString(b []byte, s string) ([]byte, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return b, fmt.Errorf("string %q contains NUL", s)
	}
	return append(append(b, s...), 0), nil
}
