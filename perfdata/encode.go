package perfdata

import (
	"errors"
	"fmt"
	"math/bits"
)

// AppendRecord appends the little-endian encoding of rec, header included,
// to dst. A kernel record's sample id fields are encoded by its Attr (a
// SAMPLE needs one). Encoding what Reader decoded gives back the same
// bytes.
func AppendRecord(dst []byte, rec Record) ([]byte, error) {
	start := len(dst)
	c := rec.Base()
	typ := rec.Type()
	dst = le.AppendUint32(dst, uint32(typ))
	dst = le.AppendUint16(dst, c.Misc)
	dst = le.AppendUint16(dst, 0) // size, patched below
	var err error
	switch v := rec.(type) {
	case *Sample:
		if c.Attr == nil {
			return dst[:start], errors.New("encoding a SAMPLE: it has no attr")
		}
		dst, err = appendSample(dst, v)
	case *Unknown:
		dst = append(dst, v.Data...)
	default:
		if typ.IsUser() {
			dst, err = appendUser(dst, rec)
		} else {
			dst, err = appendKernel(dst, rec)
			if err == nil && c.Attr != nil {
				dst = appendSampleID(dst, c)
			}
		}
	}
	if err != nil {
		return dst[:start], fmt.Errorf("encoding a %v record: %w", typ, err)
	}
	size := len(dst) - start
	if size > 0xffff {
		return dst[:start], fmt.Errorf("encoding a %v record: %d bytes exceed the 64 KiB a record can hold", typ, size)
	}
	le.PutUint16(dst[start+6:], uint16(size))
	return dst, nil
}

func appendSampleID(dst []byte, c *Common) []byte {
	a := c.Attr
	if a.Flags&FlagSampleIDAll == 0 {
		return dst
	}
	for _, f := range sampleIDFields {
		if a.SampleType&f.bit == 0 {
			continue
		}
		if f.kind == fieldPair {
			x, y := c.pair(f.bit)
			dst = le.AppendUint32(le.AppendUint32(dst, *x), *y)
		} else {
			dst = le.AppendUint64(dst, *c.word(f.bit))
		}
	}
	return dst
}

func appendSample(dst []byte, s *Sample) ([]byte, error) {
	a := s.Attr
	u64 := le.AppendUint64
	for _, f := range sampleFields {
		if a.SampleType&f.bit == 0 {
			continue
		}
		switch f.kind {
		case fieldU64:
			dst = u64(dst, *s.word(f.bit))
		case fieldPair:
			x, y := s.pair(f.bit)
			dst = le.AppendUint32(le.AppendUint32(dst, *x), *y)
		case fieldRead:
			var err error
			if dst, err = appendReadValues(dst, &s.Read, a.ReadFormat); err != nil {
				return dst, err
			}
		case fieldCallchain:
			dst = u64(dst, uint64(len(s.Callchain)))
			for _, ip := range s.Callchain {
				dst = u64(dst, ip)
			}
		case fieldRaw:
			dst = le.AppendUint32(dst, uint32(len(s.Raw)))
			dst = append(dst, s.Raw...)
			dst = append(dst, make([]byte, pad8(4+len(s.Raw))-4-len(s.Raw))...)
		case fieldBranches:
			dst = u64(dst, uint64(len(s.Branches)))
			if a.BranchSampleType&BranchSampleHWIndex != 0 {
				dst = u64(dst, s.BranchHWIdx)
			}
			for _, b := range s.Branches {
				dst = u64(u64(u64(dst, b.From), b.To), b.Flags)
			}
		case fieldRegs:
			regs, abi, mask := s.regs(f.bit)
			dst = u64(dst, *abi)
			if *abi != 0 {
				if len(*regs) != bits.OnesCount64(mask) {
					return dst, fmt.Errorf("%d %s registers for a mask of %d", len(*regs), regsName(f.bit), bits.OnesCount64(mask))
				}
				for _, r := range *regs {
					dst = u64(dst, r)
				}
			}
		case fieldStack:
			dst = u64(dst, uint64(len(s.StackUser)))
			dst = append(dst, s.StackUser...)
			if len(s.StackUser) != 0 {
				dst = u64(dst, s.StackDyn)
			}
		case fieldAux:
			dst = u64(dst, uint64(len(s.Aux)))
			dst = append(dst, s.Aux...)
		}
	}
	return dst, nil
}

// regsName names a register field in errors.
func regsName(bit SampleFormat) string {
	if bit == SampleRegsIntr {
		return "interrupt"
	}
	return "user"
}

func appendReadValues(dst []byte, r *ReadValues, f ReadFormat) ([]byte, error) {
	u64 := le.AppendUint64
	if f&ReadGroup == 0 {
		if len(r.Values) != 1 {
			return dst, fmt.Errorf("%d read values without PERF_FORMAT_GROUP, want 1", len(r.Values))
		}
		v := r.Values[0]
		dst = u64(dst, v.Value)
		if f&ReadTotalTimeEnabled != 0 {
			dst = u64(dst, r.TimeEnabled)
		}
		if f&ReadTotalTimeRunning != 0 {
			dst = u64(dst, r.TimeRunning)
		}
		if f&ReadID != 0 {
			dst = u64(dst, v.ID)
		}
		if f&ReadLost != 0 {
			dst = u64(dst, v.Lost)
		}
		return dst, nil
	}
	dst = u64(dst, uint64(len(r.Values)))
	if f&ReadTotalTimeEnabled != 0 {
		dst = u64(dst, r.TimeEnabled)
	}
	if f&ReadTotalTimeRunning != 0 {
		dst = u64(dst, r.TimeRunning)
	}
	for _, v := range r.Values {
		dst = u64(dst, v.Value)
		if f&ReadID != 0 {
			dst = u64(dst, v.ID)
		}
		if f&ReadLost != 0 {
			dst = u64(dst, v.Lost)
		}
	}
	return dst, nil
}

// appendCString appends s with a NUL, padded to 8 bytes as the kernel does.
func appendCString(dst []byte, s string) []byte {
	n := pad8(len(s) + 1)
	dst = append(dst, s...)
	return append(dst, make([]byte, n-len(s))...)
}

// appendKernel appends the body of a kernel record by its layout
// (recordfields.go).
func appendKernel(dst []byte, rec Record) ([]byte, error) {
	l := layoutOfRecord(rec)
	if l == nil {
		return dst, fmt.Errorf("no encoder for %T", rec)
	}
	return appendFields(dst, rec, l)
}

func appendUser(dst []byte, rec Record) ([]byte, error) {
	u64 := le.AppendUint64
	switch v := rec.(type) {
	case *HeaderAttr:
		dst = appendAttr(dst, v.EventAttr)
		for _, id := range v.EventAttr.IDs {
			dst = u64(dst, id)
		}
	case *HeaderBuildID:
		// appendBuildID writes its own header, with the misc bits that
		// say the build-id's size; it replaces the one written for us.
		dst = appendBuildID(dst[:len(dst)-8], &v.BuildID)
	case *FinishedRound, *FinishedInit, *IDIndex:
		return appendFields(dst, rec, layoutOfRecord(rec))
	case *TimeConv:
		dst = u64(u64(u64(dst, v.TimeShift), v.TimeMult), v.TimeZero)
		if v.Ext {
			dst = u64(u64(dst, v.TimeCycles), v.TimeMask)
			var caps [8]byte
			if v.CapUserTimeZero {
				caps[0] = 1
			}
			if v.CapUserTimeShort {
				caps[1] = 1
			}
			dst = append(dst, caps[:]...)
		}
	case *HeaderFeature:
		dst = append(u64(dst, uint64(v.Feature)), v.Data...)
	case *HeaderEventType:
		dst = append(dst, v.Data...)
	default:
		return dst, fmt.Errorf("no encoder for %T", rec)
	}
	return dst, nil
}
