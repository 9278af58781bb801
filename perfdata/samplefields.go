package perfdata

// The fields of a SAMPLE record, in the order the kernel writes them
// (perf_output_sample in kernel/events/core.c), and those of the
// sample_id trailer of the other kernel records (__perf_event_header__
// init_id): written down once, here, and read by the decoder, the
// encoder, the fixed-field reader and the sample id lookups, as Go's
// trace reader keeps one spec table for its wire format.

// fieldKind is how a field is laid out.
type fieldKind uint8

const (
	fieldU64       fieldKind = iota // one u64
	fieldPair                       // two u32s in one word: pid and tid, cpu and res
	fieldRead                       // read_format values
	fieldCallchain                  // nr, then nr u64s
	fieldRaw                        // u32 size, the bytes, padded to 8 with the size
	fieldBranches                   // nr, hw_idx with BranchSampleHWIndex, nr {from, to, flags}
	fieldRegs                       // abi, then a u64 per bit of the attr's mask unless abi is 0
	fieldStack                      // size, the bytes, then dyn_size unless size is 0
	fieldAux                        // size, the bytes
)

// fixed reports whether a field of kind k is one u64 word whatever the
// attr says.
func (k fieldKind) fixed() bool { return k == fieldU64 || k == fieldPair }

type sampleField struct {
	bit  SampleFormat
	kind fieldKind
}

// sampleFields are the fields of a SAMPLE body in order. The fixed ones
// come first (IDENTIFIER through PERIOD): a flat profile reads only those.
var sampleFields = [...]sampleField{
	{SampleIdentifier, fieldU64},
	{SampleIP, fieldU64},
	{SampleTID, fieldPair},
	{SampleTime, fieldU64},
	{SampleAddr, fieldU64},
	{SampleID, fieldU64},
	{SampleStreamID, fieldU64},
	{SampleCPU, fieldPair},
	{SamplePeriod, fieldU64},
	{SampleRead, fieldRead},
	{SampleCallchain, fieldCallchain},
	{SampleRaw, fieldRaw},
	{SampleBranchStack, fieldBranches},
	{SampleRegsUser, fieldRegs},
	{SampleStackUser, fieldStack},
	{SampleWeight | SampleWeightStruct, fieldU64},
	{SampleDataSrc, fieldU64},
	{SampleTransaction, fieldU64},
	{SampleRegsIntr, fieldRegs},
	{SamplePhysAddr, fieldU64},
	{SampleCgroup, fieldU64},
	{SampleDataPageSize, fieldU64},
	{SampleCodePageSize, fieldU64},
	{SampleAux, fieldAux},
}

// numFixed is how many of sampleFields lead it with a fixed size.
var numFixed = func() int {
	for i, f := range sampleFields {
		if !f.kind.fixed() {
			return i
		}
	}
	return len(sampleFields)
}()

// sampleIDFields are the fields of the sample_id trailer of a non-sample
// record (with FlagSampleIDAll), in order.
var sampleIDFields = [...]sampleField{
	{SampleTID, fieldPair},
	{SampleTime, fieldU64},
	{SampleID, fieldU64},
	{SampleStreamID, fieldU64},
	{SampleCPU, fieldPair},
	{SampleIdentifier, fieldU64},
}

// word returns the field of c that the one-word field bit fills.
func (c *Common) word(bit SampleFormat) *uint64 {
	switch bit {
	case SampleTime:
		return &c.Time
	case SampleID, SampleIdentifier:
		return &c.ID
	case SampleStreamID:
		return &c.StreamID
	}
	panic("perfdata: no Common field for " + bit.String())
}

// pair returns the fields of c that the two-u32 field bit fills.
func (c *Common) pair(bit SampleFormat) (*uint32, *uint32) {
	if bit == SampleCPU {
		return &c.CPU, &c.CPURes
	}
	return &c.PID, &c.TID
}

// word returns the field of s that the one-word field bit fills.
func (s *Sample) word(bit SampleFormat) *uint64 {
	switch bit {
	case SampleIP:
		return &s.IP
	case SampleAddr:
		return &s.Addr
	case SamplePeriod:
		return &s.Period
	case SampleWeight | SampleWeightStruct:
		return &s.Weight
	case SampleDataSrc:
		return &s.DataSrc
	case SampleTransaction:
		return &s.Transaction
	case SamplePhysAddr:
		return &s.PhysAddr
	case SampleCgroup:
		return &s.Cgroup
	case SampleDataPageSize:
		return &s.DataPage
	case SampleCodePageSize:
		return &s.CodePage
	}
	return s.Common.word(bit)
}

// regs returns the registers, their ABI word and their mask of the
// register field bit.
func (s *Sample) regs(bit SampleFormat) (regs *[]uint64, abi *uint64, mask uint64) {
	if bit == SampleRegsIntr {
		return &s.RegsIntr, &s.RegsIntrABI, s.Attr.SampleRegsIntr
	}
	return &s.RegsUser, &s.RegsUserABI, s.Attr.SampleRegsUser
}

// sampleLayout is where the fixed fields are in the SAMPLE bodies of one
// sample_type: byte offsets from the start of the body, -1 for a field
// the type lacks. Reading them by name, rather than walking the table,
// keeps the per-sample work of a flat profile to a few loads.
type sampleLayout struct {
	t                                   SampleFormat
	identifier, ip, tid, time, addr, id int
	streamID, cpu, period               int
	fixed                               int           // bytes of the fixed fields: where the others start
	rest                                []sampleField // the others t has, in order
}

// layoutOf computes the layout of t from sampleFields.
func layoutOf(t SampleFormat) sampleLayout {
	l := sampleLayout{t: t}
	off := 0
	for _, f := range sampleFields[:numFixed] {
		at := -1
		if t&f.bit != 0 {
			at = off
			off += 8
		}
		*l.slot(f.bit) = at
	}
	l.fixed = off
	for _, f := range sampleFields[numFixed:] {
		if t&f.bit != 0 {
			l.rest = append(l.rest, f)
		}
	}
	return l
}

func (l *sampleLayout) slot(bit SampleFormat) *int {
	switch bit {
	case SampleIdentifier:
		return &l.identifier
	case SampleIP:
		return &l.ip
	case SampleTID:
		return &l.tid
	case SampleTime:
		return &l.time
	case SampleAddr:
		return &l.addr
	case SampleID:
		return &l.id
	case SampleStreamID:
		return &l.streamID
	case SampleCPU:
		return &l.cpu
	}
	return &l.period
}

// sampleIDSize is the size of the sample_id trailer of non-sample records.
func (a *Attr) sampleIDSize() int {
	if a.Flags&FlagSampleIDAll == 0 {
		return 0
	}
	n := 0
	for _, f := range sampleIDFields {
		if a.SampleType&f.bit != 0 {
			n += 8
		}
	}
	return n
}

// idPos is the index, in u64 words from the start of a SAMPLE body, of
// the sample id, or -1 (perf's __evsel__calc_id_pos): IDENTIFIER, or
// else ID where the fixed fields before it put it.
func idPos(t SampleFormat) int {
	if t&SampleIdentifier != 0 {
		return 0
	}
	if t&SampleID == 0 {
		return -1
	}
	return layoutOf(t).id / 8
}

// isPos is the index, in u64 words back from the end of a non-sample
// record, of the sample id, or -1 (perf's __evsel__calc_is_pos).
func isPos(t SampleFormat) int {
	if t&(SampleIdentifier|SampleID) == 0 {
		return -1
	}
	// Of the trailer's fields, the last one that is the id, counted
	// from the end: IDENTIFIER, last of all, wins over ID.
	n := 0
	for i := len(sampleIDFields) - 1; i >= 0; i-- {
		f := sampleIDFields[i]
		if t&f.bit == 0 {
			continue
		}
		n++
		if f.bit == SampleIdentifier || f.bit == SampleID {
			return n
		}
	}
	return -1
}
