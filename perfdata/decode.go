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
	if t&SampleTID != 0 {
		c.PID, c.TID = d.u32(), d.u32()
	}
	if t&SampleTime != 0 {
		c.Time = d.u64()
	}
	if t&SampleID != 0 {
		c.ID = d.u64()
	}
	if t&SampleStreamID != 0 {
		c.StreamID = d.u64()
	}
	if t&SampleCPU != 0 {
		c.CPU, c.CPURes = d.u32(), d.u32()
	}
	if t&SampleIdentifier != 0 {
		c.ID = d.u64()
	}
	return nil
}

// decodeSample decodes the body of a SAMPLE by its attr's sample_type;
// with skipChain it steps over the callchain without copying it.
func decodeSample(s *Sample, body []byte, swap, skipChain bool) error {
	a := s.Attr
	t := a.SampleType
	d := dec{b: body, swap: swap}
	if t&SampleIdentifier != 0 {
		s.ID = d.u64()
	}
	if t&SampleIP != 0 {
		s.IP = d.u64()
	}
	if t&SampleTID != 0 {
		s.PID, s.TID = d.u32(), d.u32()
	}
	if t&SampleTime != 0 {
		s.Time = d.u64()
	}
	if t&SampleAddr != 0 {
		s.Addr = d.u64()
	}
	if t&SampleID != 0 {
		s.ID = d.u64()
	}
	if t&SampleStreamID != 0 {
		s.StreamID = d.u64()
	}
	if t&SampleCPU != 0 {
		s.CPU, s.CPURes = d.u32(), d.u32()
	}
	if t&SamplePeriod != 0 {
		s.Period = d.u64()
	} else if a.Flags&FlagFreq == 0 {
		// A fixed period is in the attr alone; perf reports it as the
		// sample's period, and so do we.
		s.Period = a.SamplePeriod
	} else {
		s.Period = 0
	}
	if t&SampleRead != 0 {
		if err := decodeReadValues(&s.Read, &d, a.ReadFormat); err != nil {
			return err
		}
	}
	if t&SampleCallchain != 0 {
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
	}
	if t&SampleRaw != 0 {
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
	}
	if t&SampleBranchStack != 0 {
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
	}
	if t&SampleRegsUser != 0 {
		s.RegsUserABI = d.u64()
		s.RegsUser = s.RegsUser[:0]
		if s.RegsUserABI != 0 {
			s.RegsUser = d.u64s(s.RegsUser, uint64(bits.OnesCount64(a.SampleRegsUser)))
		}
	}
	if t&SampleStackUser != 0 {
		n := d.u64()
		if n > uint64(len(d.b)-d.off) {
			return fmt.Errorf("user stack of %d bytes is longer than the %d bytes left in the record", n, len(d.b)-d.off)
		}
		s.StackUser = d.bytes(n)
		s.StackDyn = 0
		if n != 0 {
			s.StackDyn = d.u64()
		}
	}
	if t&(SampleWeight|SampleWeightStruct) != 0 {
		s.Weight = d.u64()
	}
	if t&SampleDataSrc != 0 {
		s.DataSrc = d.u64()
	}
	if t&SampleTransaction != 0 {
		s.Transaction = d.u64()
	}
	if t&SampleRegsIntr != 0 {
		s.RegsIntrABI = d.u64()
		s.RegsIntr = s.RegsIntr[:0]
		if s.RegsIntrABI != 0 {
			s.RegsIntr = d.u64s(s.RegsIntr, uint64(bits.OnesCount64(a.SampleRegsIntr)))
		}
	}
	if t&SamplePhysAddr != 0 {
		s.PhysAddr = d.u64()
	}
	if t&SampleCgroup != 0 {
		s.Cgroup = d.u64()
	}
	if t&SampleDataPageSize != 0 {
		s.DataPage = d.u64()
	}
	if t&SampleCodePageSize != 0 {
		s.CodePage = d.u64()
	}
	if t&SampleAux != 0 {
		n := d.u64()
		if n > uint64(len(d.b)-d.off) {
			return fmt.Errorf("aux data of %d bytes is longer than the %d bytes left in the record", n, len(d.b)-d.off)
		}
		s.Aux = d.bytes(n)
	}
	if d.short {
		return fmt.Errorf("sample_type %v needs more than the record's %d bytes: %w", t, len(body), errShort)
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
