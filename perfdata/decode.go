package perfdata

import (
	"errors"
	"fmt"
	"math/bits"
)

// errShort is what a decoder reports when a record is shorter than its
// fields; the Reader wraps it with the offset and type.
var errShort = errors.New("record is shorter than its fields")

// decodeSampleID decodes the sample_id trailer of a non-sample record.
func decodeSampleID(c *Common, body []byte, swap bool) error {
	n := c.Attr.sampleIDSize()
	if n == 0 {
		return nil
	}
	if n > len(body) {
		return fmt.Errorf("sample_id trailer of %d bytes in a %d-byte body: %w", n, len(body), errShort)
	}
	d := dec{b: body[len(body)-n:], swap: swap}
	t := c.Attr.SampleType
	for _, f := range sampleIDFields {
		if t&f.bit == 0 {
			continue
		}
		if f.kind == fieldPair {
			a, b := c.pair(f.bit)
			*a, *b = d.u32(), d.u32()
		} else {
			*c.word(f.bit) = d.u64()
		}
	}
	return nil
}

// decodeFixed decodes the fixed fields of a SAMPLE body laid out as l,
// which must hold them: the whole of what a flat profile reads.
func decodeFixed(s *Sample, body []byte, l *sampleLayout, swap bool) {
	if l.identifier >= 0 {
		s.ID = word(body, l.identifier, swap)
	}
	if l.ip >= 0 {
		s.IP = word(body, l.ip, swap)
	}
	if l.tid >= 0 {
		s.PID, s.TID = pair(body, l.tid, swap)
	}
	if l.time >= 0 {
		s.Time = word(body, l.time, swap)
	}
	if l.addr >= 0 {
		s.Addr = word(body, l.addr, swap)
	}
	if l.id >= 0 {
		s.ID = word(body, l.id, swap)
	}
	if l.streamID >= 0 {
		s.StreamID = word(body, l.streamID, swap)
	}
	if l.cpu >= 0 {
		s.CPU, s.CPURes = pair(body, l.cpu, swap)
	}
	switch a := s.Attr; {
	case l.period >= 0:
		s.Period = word(body, l.period, swap)
	case a.Flags&FlagFreq == 0:
		// A fixed period is in the attr alone; perf reports it as the
		// sample's period, and so do we.
		s.Period = a.SamplePeriod
	default:
		s.Period = 0
	}
}

// word is the u64 at off in b.
func word(b []byte, off int, swap bool) uint64 {
	v := le.Uint64(b[off:])
	if swap {
		v = bits.ReverseBytes64(v)
	}
	return v
}

// pair is the two u32s at off in b.
func pair(b []byte, off int, swap bool) (uint32, uint32) {
	v := le.Uint64(b[off:])
	x, y := uint32(v), uint32(v>>32)
	if swap {
		x, y = bits.ReverseBytes32(x), bits.ReverseBytes32(y)
	}
	return x, y
}

// decodeSample decodes the body of a SAMPLE laid out as l, its attr's
// sample_type; with skipChain it steps over the callchain without
// copying it.
func decodeSample(s *Sample, body []byte, l *sampleLayout, swap, skipChain bool) error {
	a := s.Attr
	t := a.SampleType
	if l.fixed > len(body) {
		return fmt.Errorf("sample_type %v needs more than the record's %d bytes: %w", t, len(body), errShort)
	}
	decodeFixed(s, body, l, swap)
	d := dec{b: body, off: l.fixed, swap: swap}
	for _, f := range l.rest {
		if err := decodeField(s, &d, f, skipChain); err != nil {
			return err
		}
	}
	if d.short {
		return fmt.Errorf("sample_type %v needs more than the record's %d bytes: %w", t, len(body), errShort)
	}
	return nil
}

// decodeField decodes one variable-size field of a SAMPLE.
func decodeField(s *Sample, d *dec, f sampleField, skipChain bool) error {
	a := s.Attr
	switch f.kind {
	case fieldU64:
		*s.word(f.bit) = d.u64()
	case fieldRead:
		return decodeReadValues(&s.Read, d, a.ReadFormat)
	case fieldCallchain:
		n := d.u64()
		if n > uint64(len(d.b)-d.off)/8 {
			return fmt.Errorf("callchain of %d entries is longer than the %d bytes left in the record", n, len(d.b)-d.off)
		}
		if skipChain {
			s.Callchain = s.Callchain[:0]
			d.off += int(n) * 8
		} else {
			s.Callchain = d.u64s(s.Callchain, n)
		}
	case fieldRaw:
		n := d.u32()
		if uint64(n) > uint64(len(d.b)-d.off) {
			return fmt.Errorf("raw data of %d bytes is longer than the %d bytes left in the record", n, len(d.b)-d.off)
		}
		s.Raw = d.bytes(uint64(n))
		// The raw size plus its u32 length are padded to 8 bytes.
		d.off += pad8(4+int(n)) - (4 + int(n))
		if d.off > len(d.b) {
			d.short = true
			d.off = len(d.b)
		}
	case fieldBranches:
		n := d.u64()
		if a.BranchSampleType&BranchSampleHWIndex != 0 {
			s.BranchHWIdx = d.u64()
		}
		if n > uint64(len(d.b)-d.off)/24 {
			return fmt.Errorf("branch stack of %d entries is longer than the %d bytes left in the record", n, len(d.b)-d.off)
		}
		s.Branches = s.Branches[:0]
		for i := uint64(0); i < n; i++ {
			s.Branches = append(s.Branches, Branch{d.u64(), d.u64(), d.u64()})
		}
	case fieldRegs:
		regs, abi, mask := s.regs(f.bit)
		*abi = d.u64()
		*regs = (*regs)[:0]
		if *abi != 0 {
			*regs = d.u64s(*regs, uint64(bits.OnesCount64(mask)))
		}
	case fieldStack:
		n := d.u64()
		if n > uint64(len(d.b)-d.off) {
			return fmt.Errorf("user stack of %d bytes is longer than the %d bytes left in the record", n, len(d.b)-d.off)
		}
		s.StackUser = d.bytes(n)
		s.StackDyn = 0
		if n != 0 {
			s.StackDyn = d.u64()
		}
	case fieldAux:
		n := d.u64()
		if n > uint64(len(d.b)-d.off) {
			return fmt.Errorf("aux data of %d bytes is longer than the %d bytes left in the record", n, len(d.b)-d.off)
		}
		s.Aux = d.bytes(n)
	}
	return nil
}

func decodeReadValues(r *ReadValues, d *dec, f ReadFormat) error {
	r.Values = r.Values[:0]
	r.TimeEnabled, r.TimeRunning = 0, 0
	perValue := uint64(1)
	if f&ReadID != 0 {
		perValue++
	}
	if f&ReadLost != 0 {
		perValue++
	}
	readOne := func() ReadValue {
		v := ReadValue{Value: d.u64()}
		if f&ReadID != 0 {
			v.ID = d.u64()
		}
		if f&ReadLost != 0 {
			v.Lost = d.u64()
		}
		return v
	}
	if f&ReadGroup == 0 {
		v := ReadValue{Value: d.u64()}
		if f&ReadTotalTimeEnabled != 0 {
			r.TimeEnabled = d.u64()
		}
		if f&ReadTotalTimeRunning != 0 {
			r.TimeRunning = d.u64()
		}
		if f&ReadID != 0 {
			v.ID = d.u64()
		}
		if f&ReadLost != 0 {
			v.Lost = d.u64()
		}
		r.Values = append(r.Values, v)
		return nil
	}
	n := d.u64()
	if f&ReadTotalTimeEnabled != 0 {
		r.TimeEnabled = d.u64()
	}
	if f&ReadTotalTimeRunning != 0 {
		r.TimeRunning = d.u64()
	}
	if n > uint64(len(d.b)-d.off)/(8*perValue) {
		return fmt.Errorf("read group of %d values is longer than the %d bytes left in the record", n, len(d.b)-d.off)
	}
	for i := uint64(0); i < n; i++ {
		r.Values = append(r.Values, readOne())
	}
	return nil
}

func pad8(n int) int { return (n + 7) &^ 7 }
