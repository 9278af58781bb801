package perfdata

import "fmt"

// The bodies of the kernel's records other than SAMPLE (the structs
// after struct perf_event_header in include/uapi/linux/perf_event.h,
// before their sample_id trailer), and of perf's records that have one
// fixed layout: written down once, here, and read by the decoder
// (decodeKernel), the encoder (appendFields) and `jitprof dump`
// (AppendFields), as samplefields.go does for a SAMPLE's fields.
//
// perf's other records (HEADER_ATTR, HEADER_BUILD_ID, HEADER_FEATURE,
// HEADER_EVENT_TYPE, TIME_CONV, TRACING_DATA, AUXTRACE) are not in the
// table: reading them changes the File (its attrs, features and event
// types), their layout is another table's (an attr's, a feature
// section's) or depends on the record's length (TIME_CONV's fields of
// Linux 5.11, HEADER_BUILD_ID's size in its misc bits, a payload after
// the record in a stream), so reader.go and encode.go keep them.

// recKind is how a record field is laid out.
type recKind uint8

const (
	recU16        recKind = iota
	recU32                // also two u32s a field each: pid and tid
	recU64                //
	recString             // NUL-terminated, padded with NULs to 8 bytes
	recTag                // 8 bytes
	recBuildID            // u8 size, 3 bytes of padding, 20 bytes whose first size are the build-id
	recNamespaces         // u64 nr, then nr {dev, inode}
	recIDIndex            // u64 nr, then nr {id, idx, cpu, tid}
	recPoke               // u16 old_len, u16 new_len, then the old bytes
	recPokeNew            // the new bytes, padded to 8 with the lengths and the old ones
	recRead               // read_format values, as the record's attr says
)

// recWhen says which records of a layout have a field.
type recWhen uint8

const (
	always       recWhen = iota
	mmap2                // MMAP2, not MMAP
	mmap2BuildID         // MMAP2 with MiscMmapBuildID
	mmap2Inode           // MMAP2 without it
	cpuWide              // SWITCH_CPU_WIDE, not SWITCH
)

func (w recWhen) holds(t RecordType, misc uint16) bool {
	switch w {
	case mmap2:
		return t == RecordMmap2
	case mmap2BuildID:
		return t == RecordMmap2 && misc&MiscMmapBuildID != 0
	case mmap2Inode:
		return t == RecordMmap2 && misc&MiscMmapBuildID == 0
	case cpuWide:
		return t == RecordSwitchCPUWide
	}
	return true
}

// recField is a field of a record body. at returns a pointer to it in
// a record of the layout's type: *uint16, *uint32 or *uint64 for the
// numbers, *string, *[8]byte, *[]byte, *[]NamespaceLink,
// *[]IDIndexEntry or *ReadValues.
type recField struct {
	name string // perf_event.h's, which dump's parts name
	kind recKind
	when recWhen
	at   func(Record) any
}

// showPart is a piece of how `jitprof dump` shows a record: format, a
// fmt format of one verb, of field, when the record has the field (or,
// with zero, when not too: its zero value). A part without a field is
// text shown when the record's misc bits include misc, or with notMisc
// lack them.
type showPart struct {
	format  string
	field   string
	signed  bool // a u32 shown as an int32 (perf's pid -1 of the kernel's mappings)
	zero    bool
	misc    uint16
	notMisc bool
}

// recLayout is the body of the records of one or two types (MMAP and
// MMAP2, THROTTLE and UNTHROTTLE, SWITCH and SWITCH_CPU_WIDE share one).
type recLayout struct {
	fields []recField
	show   []showPart
}

var (
	mmapLayout = recLayout{
		fields: []recField{
			{"pid", recU32, always, func(r Record) any { return &r.(*Mmap).PID }},
			{"tid", recU32, always, func(r Record) any { return &r.(*Mmap).TID }},
			{"addr", recU64, always, func(r Record) any { return &r.(*Mmap).Addr }},
			{"len", recU64, always, func(r Record) any { return &r.(*Mmap).Len }},
			{"pgoff", recU64, always, func(r Record) any { return &r.(*Mmap).Pgoff }},
			{"build_id", recBuildID, mmap2BuildID, func(r Record) any { return &r.(*Mmap).BuildID }},
			{"maj", recU32, mmap2Inode, func(r Record) any { return &r.(*Mmap).Maj }},
			{"min", recU32, mmap2Inode, func(r Record) any { return &r.(*Mmap).Min }},
			{"ino", recU64, mmap2Inode, func(r Record) any { return &r.(*Mmap).Ino }},
			{"ino_generation", recU64, mmap2Inode, func(r Record) any { return &r.(*Mmap).InoGeneration }},
			{"prot", recU32, mmap2, func(r Record) any { return &r.(*Mmap).Prot }},
			{"flags", recU32, mmap2, func(r Record) any { return &r.(*Mmap).Flags }},
			{"filename", recString, always, func(r Record) any { return &r.(*Mmap).Filename }},
		},
		show: []showPart{
			{format: " %d", field: "pid", signed: true}, {format: "/%d", field: "tid", signed: true},
			{format: ": [%#x", field: "addr"}, {format: "(%#x)", field: "len"}, {format: " @ %#x", field: "pgoff"},
			{format: " build-id %x", field: "build_id"},
			{format: " %02x", field: "maj"}, {format: ":%02x", field: "min"}, {format: " %d", field: "ino"}, {format: " %d", field: "ino_generation"},
			{format: " prot %#x", field: "prot"}, {format: " flags %#x", field: "flags"},
			{format: "]: %s", field: "filename"},
		},
	}
	commLayout = recLayout{
		fields: []recField{
			{"pid", recU32, always, func(r Record) any { return &r.(*Comm).PID }},
			{"tid", recU32, always, func(r Record) any { return &r.(*Comm).TID }},
			{"comm", recString, always, func(r Record) any { return &r.(*Comm).Comm }},
		},
		show: []showPart{{format: " exec", misc: MiscCommExec}, {format: ": %s", field: "comm"}, {format: ":%d", field: "pid"}, {format: "/%d", field: "tid"}},
	}
	forkLayout = recLayout{
		fields: []recField{
			{"pid", recU32, always, func(r Record) any { return &r.(*Fork).PID }},
			{"ppid", recU32, always, func(r Record) any { return &r.(*Fork).PPID }},
			{"tid", recU32, always, func(r Record) any { return &r.(*Fork).TID }},
			{"ptid", recU32, always, func(r Record) any { return &r.(*Fork).PTID }},
			{"time", recU64, always, func(r Record) any { return &r.(*Fork).ForkTime }},
		},
		show: forkShow,
	}
	exitLayout = recLayout{
		fields: []recField{
			{"pid", recU32, always, func(r Record) any { return &r.(*Exit).PID }},
			{"ppid", recU32, always, func(r Record) any { return &r.(*Exit).PPID }},
			{"tid", recU32, always, func(r Record) any { return &r.(*Exit).TID }},
			{"ptid", recU32, always, func(r Record) any { return &r.(*Exit).PTID }},
			{"time", recU64, always, func(r Record) any { return &r.(*Exit).ExitTime }},
		},
		show: forkShow,
	}
	forkShow   = []showPart{{format: " (%d", field: "pid"}, {format: ":%d)", field: "tid"}, {format: ":(%d", field: "ppid"}, {format: ":%d)", field: "ptid"}}
	lostLayout = recLayout{
		fields: []recField{
			{"id", recU64, always, func(r Record) any { return &r.(*Lost).LostID }},
			{"lost", recU64, always, func(r Record) any { return &r.(*Lost).Lost }},
		},
		show: []showPart{{format: " id %d", field: "id"}, {format: " lost %d", field: "lost"}},
	}
	lostSamplesLayout = recLayout{
		fields: []recField{{"lost", recU64, always, func(r Record) any { return &r.(*LostSamples).Lost }}},
		show:   []showPart{{format: " lost %d", field: "lost"}},
	}
	throttleLayout = recLayout{
		fields: []recField{
			{"time", recU64, always, func(r Record) any { return &r.(*Throttle).ThrottleTime }},
			{"id", recU64, always, func(r Record) any { return &r.(*Throttle).ThrottleID }},
			{"stream_id", recU64, always, func(r Record) any { return &r.(*Throttle).ThrottleStrID }},
		},
		show: []showPart{{format: " time %d", field: "time"}, {format: " id %d", field: "id"}},
	}
	switchLayout = recLayout{
		fields: []recField{
			{"next_prev_pid", recU32, cpuWide, func(r Record) any { return &r.(*Switch).NextPrevPID }},
			{"next_prev_tid", recU32, cpuWide, func(r Record) any { return &r.(*Switch).NextPrevTID }},
		},
		show: []showPart{
			{format: " out", misc: MiscSwitchOut}, {format: " in", misc: MiscSwitchOut, notMisc: true},
			{format: " next/prev %d", field: "next_prev_pid", zero: true}, {format: "/%d", field: "next_prev_tid", zero: true},
		},
	}
	namespacesLayout = recLayout{
		fields: []recField{
			{"pid", recU32, always, func(r Record) any { return &r.(*Namespaces).PID }},
			{"tid", recU32, always, func(r Record) any { return &r.(*Namespaces).TID }},
			{"link_info", recNamespaces, always, func(r Record) any { return &r.(*Namespaces).Namespaces }},
		},
	}
	ksymbolLayout = recLayout{
		fields: []recField{
			{"addr", recU64, always, func(r Record) any { return &r.(*Ksymbol).Addr }},
			{"len", recU32, always, func(r Record) any { return &r.(*Ksymbol).Len }},
			{"ksym_type", recU16, always, func(r Record) any { return &r.(*Ksymbol).KsymType }},
			{"flags", recU16, always, func(r Record) any { return &r.(*Ksymbol).KFlags }},
			{"name", recString, always, func(r Record) any { return &r.(*Ksymbol).Name }},
		},
		show: []showPart{{format: " addr %#x", field: "addr"}, {format: " len %d", field: "len"}, {format: " type %d", field: "ksym_type"},
			{format: " flags %#x", field: "flags"}, {format: " name %s", field: "name"}},
	}
	bpfEventLayout = recLayout{
		fields: []recField{
			{"type", recU16, always, func(r Record) any { return &r.(*BPFEvent).BPFType }},
			{"flags", recU16, always, func(r Record) any { return &r.(*BPFEvent).BPFFlags }},
			{"id", recU32, always, func(r Record) any { return &r.(*BPFEvent).BPFID }},
			{"tag", recTag, always, func(r Record) any { return &r.(*BPFEvent).Tag }},
		},
		show: []showPart{{format: " type %d", field: "type"}, {format: " flags %d", field: "flags"}, {format: " id %d", field: "id"}, {format: " tag %x", field: "tag"}},
	}
	cgroupLayout = recLayout{
		fields: []recField{
			{"id", recU64, always, func(r Record) any { return &r.(*Cgroup).CgroupID }},
			{"path", recString, always, func(r Record) any { return &r.(*Cgroup).Path }},
		},
		show: []showPart{{format: " id %d", field: "id"}, {format: " path %s", field: "path"}},
	}
	textPokeLayout = recLayout{
		fields: []recField{
			{"addr", recU64, always, func(r Record) any { return &r.(*TextPoke).Addr }},
			{"old", recPoke, always, func(r Record) any { return &r.(*TextPoke).Old }},
			{"new", recPokeNew, always, func(r Record) any { return &r.(*TextPoke).New }},
		},
		show: []showPart{{format: " addr %#x", field: "addr"}, {format: " old %x", field: "old"}, {format: " new %x", field: "new"}},
	}
	readLayout = recLayout{
		fields: []recField{
			{"pid", recU32, always, func(r Record) any { return &r.(*Read).PID }},
			{"tid", recU32, always, func(r Record) any { return &r.(*Read).TID }},
			{"values", recRead, always, func(r Record) any { return &r.(*Read).Values }},
		},
	}
	auxLayout = recLayout{
		fields: []recField{
			{"aux_offset", recU64, always, func(r Record) any { return &r.(*Aux).AuxOffset }},
			{"aux_size", recU64, always, func(r Record) any { return &r.(*Aux).AuxSize }},
			{"flags", recU64, always, func(r Record) any { return &r.(*Aux).AuxFlags }},
		},
	}
	itraceStartLayout = recLayout{
		fields: []recField{
			{"pid", recU32, always, func(r Record) any { return &r.(*ItraceStart).PID }},
			{"tid", recU32, always, func(r Record) any { return &r.(*ItraceStart).TID }},
		},
	}
	auxOutputHWIDLayout = recLayout{
		fields: []recField{{"hw_id", recU64, always, func(r Record) any { return &r.(*AuxOutputHWID).HWID }}},
	}
	// perf's ID_INDEX, FINISHED_ROUND and FINISHED_INIT: a list, and
	// two bare headers. dump shows ID_INDEX's entries one a line, as
	// perf report -D does (internal/dump).
	idIndexLayout = recLayout{
		fields: []recField{{"entries", recIDIndex, always, func(r Record) any { return &r.(*IDIndex).Entries }}},
	}
	emptyLayout = recLayout{}
)

// recLayouts are the layouts by record type; nil for SAMPLE and the
// records the table does not hold.
var recLayouts = [...]*recLayout{
	RecordMmap: &mmapLayout, RecordMmap2: &mmapLayout,
	RecordComm: &commLayout, RecordFork: &forkLayout, RecordExit: &exitLayout,
	RecordLost: &lostLayout, RecordLostSamples: &lostSamplesLayout,
	RecordThrottle: &throttleLayout, RecordUnthrottle: &throttleLayout,
	RecordSwitch: &switchLayout, RecordSwitchCPUWide: &switchLayout,
	RecordNamespaces: &namespacesLayout, RecordKsymbol: &ksymbolLayout,
	RecordBPFEvent: &bpfEventLayout, RecordCgroup: &cgroupLayout,
	RecordTextPoke: &textPokeLayout, RecordRead: &readLayout, RecordAux: &auxLayout,
	RecordItraceStart: &itraceStartLayout, RecordAuxOutputHWID: &auxOutputHWIDLayout,
	RecordIDIndex: &idIndexLayout, RecordFinishedRound: &emptyLayout, RecordFinishedInit: &emptyLayout,
}

// layoutOfRecord returns the layout of rec, nil when the table does not
// hold its type (or it is kept as bytes, an Unknown).
func layoutOfRecord(rec Record) *recLayout {
	if _, ok := rec.(*Unknown); ok {
		return nil
	}
	if t := rec.Type(); int(t) < len(recLayouts) {
		return recLayouts[t]
	}
	return nil
}

// decodeFields decodes the body of rec, of type t and layout l, from d;
// a field the record lacks is zeroed (the Reader reuses its records).
func decodeFields(rec Record, t RecordType, l *recLayout, d *dec) error {
	c := rec.Base()
	var pokeNew uint16
	for i := range l.fields {
		f := &l.fields[i]
		p := f.at(rec)
		if !f.when.holds(t, c.Misc) {
			zeroField(p)
			continue
		}
		switch f.kind {
		case recU16:
			*p.(*uint16) = d.u16()
		case recU32:
			*p.(*uint32) = d.u32()
		case recU64:
			*p.(*uint64) = d.u64()
		case recString:
			if d.short {
				return errShort
			}
			*p.(*string) = d.cstring()
		case recTag:
			copy(p.(*[8]byte)[:], d.bytes(8))
		case recBuildID:
			n := d.u8()
			d.bytes(3)
			id := d.bytes(20)
			if n > 20 {
				return fmt.Errorf("build-id size %d exceeds 20", n)
			}
			b := p.(*[]byte)
			*b = (*b)[:0]
			if !d.short {
				*b = append(*b, id[:n]...)
			}
		case recNamespaces:
			n := d.u64()
			if n > uint64(len(d.b)-d.off)/16 {
				return fmt.Errorf("%d namespaces run past the record", n)
			}
			l := p.(*[]NamespaceLink)
			*l = (*l)[:0]
			for range n {
				*l = append(*l, NamespaceLink{d.u64(), d.u64()})
			}
		case recIDIndex:
			n := d.u64()
			if n > uint64(len(d.b)-d.off)/32 {
				return fmt.Errorf("%d entries run past the %d-byte body", n, len(d.b))
			}
			l := p.(*[]IDIndexEntry)
			*l = (*l)[:0]
			for range n {
				*l = append(*l, IDIndexEntry{d.u64(), d.u64(), d.u64(), d.u64()})
			}
		case recPoke:
			o := d.u16()
			pokeNew = d.u16()
			*p.(*[]byte) = d.bytes(uint64(o))
		case recPokeNew:
			*p.(*[]byte) = d.bytes(uint64(pokeNew))
		case recRead:
			if err := decodeReadValues(p.(*ReadValues), d, c.attrReadFormat()); err != nil {
				return err
			}
		}
	}
	if d.short {
		return errShort
	}
	return nil
}

// zeroField empties a field a record lacks, keeping a slice's array.
func zeroField(p any) {
	switch p := p.(type) {
	case *uint16:
		*p = 0
	case *uint32:
		*p = 0
	case *uint64:
		*p = 0
	case *[]byte:
		*p = (*p)[:0]
	}
}

// appendFields appends the body of rec, whose layout is l.
func appendFields(dst []byte, rec Record, l *recLayout) ([]byte, error) {
	t, misc := rec.Type(), rec.Base().Misc
	u64 := le.AppendUint64
	for i := range l.fields {
		f := &l.fields[i]
		if !f.when.holds(t, misc) {
			continue
		}
		p := f.at(rec)
		switch f.kind {
		case recU16:
			dst = le.AppendUint16(dst, *p.(*uint16))
		case recU32:
			dst = le.AppendUint32(dst, *p.(*uint32))
		case recU64:
			dst = u64(dst, *p.(*uint64))
		case recString:
			dst = appendCString(dst, *p.(*string))
		case recTag:
			dst = append(dst, p.(*[8]byte)[:]...)
		case recBuildID:
			id := *p.(*[]byte)
			if len(id) > 20 {
				return dst, fmt.Errorf("build-id of %d bytes exceeds 20", len(id))
			}
			var b [24]byte
			b[0] = byte(len(id))
			copy(b[4:], id)
			dst = append(dst, b[:]...)
		case recNamespaces:
			l := *p.(*[]NamespaceLink)
			dst = u64(dst, uint64(len(l)))
			for _, n := range l {
				dst = u64(u64(dst, n.Dev), n.Ino)
			}
		case recIDIndex:
			l := *p.(*[]IDIndexEntry)
			dst = u64(dst, uint64(len(l)))
			for _, e := range l {
				dst = u64(u64(u64(u64(dst, e.ID), e.Idx), e.CPU), e.TID)
			}
		case recPoke:
			tp := rec.(*TextPoke)
			dst = le.AppendUint16(le.AppendUint16(dst, uint16(len(tp.Old))), uint16(len(tp.New)))
			dst = append(dst, tp.Old...)
		case recPokeNew:
			tp := rec.(*TextPoke)
			dst = append(dst, tp.New...)
			n := 12 + len(tp.Old) + len(tp.New)
			dst = append(dst, make([]byte, pad8(n)-n)...)
		case recRead:
			var err error
			if dst, err = appendReadValues(dst, p.(*ReadValues), rec.Base().attrReadFormat()); err != nil {
				return dst, err
			}
		}
	}
	return dst, nil
}

// AppendFields appends the fields of rec as `jitprof dump` shows them,
// its strings made safe for a terminal by str; ok is false when rec is
// not one of the records whose layouts the package keeps as a table
// (SAMPLE, perf's HEADER_* and TIME_CONV records, Unknown).
func AppendFields(dst []byte, rec Record, str func(string) string) (_ []byte, ok bool) {
	l := layoutOfRecord(rec)
	if l == nil {
		return dst, false
	}
	t, misc := rec.Type(), rec.Base().Misc
	for _, s := range l.show {
		if s.field == "" {
			if (misc&s.misc != 0) != s.notMisc {
				dst = append(dst, s.format...)
			}
			continue
		}
		f := l.field(s.field)
		if !f.when.holds(t, misc) && !s.zero {
			continue
		}
		var v any
		switch p := f.at(rec).(type) {
		case *uint16:
			v = *p
		case *uint32:
			v = *p
			if s.signed {
				v = int32(*p)
			}
		case *uint64:
			v = *p
		case *string:
			v = str(*p)
		case *[8]byte:
			v = *p
		case *[]byte:
			v = *p
		}
		dst = fmt.Appendf(dst, s.format, v)
	}
	return dst, true
}

// field returns the field of l named name.
func (l *recLayout) field(name string) *recField {
	for i := range l.fields {
		if l.fields[i].name == name {
			return &l.fields[i]
		}
	}
	panic("perfdata: no record field " + name)
}
