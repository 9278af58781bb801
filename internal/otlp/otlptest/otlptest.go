// Package otlptest reads OTLP profiles back for tests: a request (what
// jitprof sends) or the ProfilesData a Collector's file exporter writes,
// decoded by the Collector's own pdata, its references checked and its
// samples flattened into plain values that tests compare.
package otlptest

import (
	"encoding/binary"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

// Sample is one OTLP sample with everything it references resolved.
type Sample struct {
	Resource map[string]any // string and int64 values
	Scope    string
	// SampleType, PeriodType are "type/unit".
	SampleType, PeriodType string
	Period                 int64
	Time, Duration         uint64 // the profile's
	ProfileID              [16]byte
	Attrs                  map[string]any // the sample's
	Values                 []int64
	Times                  []uint64
	Stack                  []Frame // leaf first
}

// Count is the number of samples it stands for: its values' sum, or,
// a sample with times and no values, one a time (the profiles proto's
// Sample).
func (s *Sample) Count() int64 {
	if len(s.Values) == 0 {
		return int64(len(s.Times))
	}
	var n int64
	for _, v := range s.Values {
		n += v
	}
	return n
}

// Frame is a location with its function and mapping.
type Frame struct {
	Name, File string
	Line       int64
	Mapping    string
	Start      uint64
	MapAttrs   map[string]any
	Attrs      map[string]any
}

// DecodeRequest decodes an ExportProfilesServiceRequest.
func DecodeRequest(b []byte) ([]Sample, error) {
	req := pprofileotlp.NewExportRequest()
	if err := req.UnmarshalProto(b); err != nil {
		return nil, fmt.Errorf("otlptest: %w", err)
	}
	return Flatten(req.Profiles())
}

// DecodeFile decodes what a Collector's file exporter wrote with format
// proto: ProfilesData messages, each after its length (4 bytes, big
// endian).
func DecodeFile(b []byte) ([]Sample, error) {
	var out []Sample
	var u pprofile.ProtoUnmarshaler
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, fmt.Errorf("otlptest: %d bytes after the last message", len(b))
		}
		n := binary.BigEndian.Uint32(b)
		if uint64(len(b)-4) < uint64(n) {
			return nil, fmt.Errorf("otlptest: a message of %d bytes in %d", n, len(b)-4)
		}
		pd, err := u.UnmarshalProfiles(b[4 : 4+n])
		if err != nil {
			return nil, fmt.Errorf("otlptest: %w", err)
		}
		ss, err := Flatten(pd)
		if err != nil {
			return nil, err
		}
		out = append(out, ss...)
		b = b[4+n:]
	}
	return out, nil
}

// Flatten resolves every sample's references, checking each: indices in
// their tables, the tables' zero entries, values and timestamps alike in
// number and the timestamps within their profile's time.
func Flatten(pd pprofile.Profiles) ([]Sample, error) {
	d := pd.Dictionary()
	strs := d.StringTable()
	if strs.Len() == 0 || strs.At(0) != "" {
		return nil, fmt.Errorf("otlptest: string_table[0] is not \"\"")
	}
	str := func(i int32) (string, error) {
		if i < 0 || int(i) >= strs.Len() {
			return "", fmt.Errorf("otlptest: string %d of %d", i, strs.Len())
		}
		return strs.At(int(i)), nil
	}
	attrs := func(idx pcommon.Int32Slice) (map[string]any, error) {
		m := map[string]any{}
		for _, i := range idx.All() {
			if i <= 0 || int(i) >= d.AttributeTable().Len() {
				return nil, fmt.Errorf("otlptest: attribute %d of %d", i, d.AttributeTable().Len())
			}
			a := d.AttributeTable().At(int(i))
			k, err := str(a.KeyStrindex())
			if err != nil {
				return nil, err
			}
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("otlptest: attribute %q twice", k)
			}
			m[k] = value(a.Value())
		}
		return m, nil
	}
	for _, t := range []struct {
		name string
		n    int
		zero bool
	}{
		{"mapping", d.MappingTable().Len(), d.MappingTable().Len() > 0 && d.MappingTable().At(0).Equal(pprofile.NewMapping())},
		{"location", d.LocationTable().Len(), d.LocationTable().Len() > 0 && d.LocationTable().At(0).Equal(pprofile.NewLocation())},
		{"function", d.FunctionTable().Len(), d.FunctionTable().Len() > 0 && d.FunctionTable().At(0).Equal(pprofile.NewFunction())},
		{"stack", d.StackTable().Len(), d.StackTable().Len() > 0 && d.StackTable().At(0).Equal(pprofile.NewStack())},
		{"attribute", d.AttributeTable().Len(), d.AttributeTable().Len() > 0 && d.AttributeTable().At(0).Equal(pprofile.NewKeyValueAndUnit())},
		{"link", d.LinkTable().Len(), d.LinkTable().Len() > 0},
	} {
		if !t.zero {
			return nil, fmt.Errorf("otlptest: %s_table[0] is not the zero value (%d entries)", t.name, t.n)
		}
	}
	frame := func(li int32) (Frame, error) {
		if li <= 0 || int(li) >= d.LocationTable().Len() {
			return Frame{}, fmt.Errorf("otlptest: location %d of %d", li, d.LocationTable().Len())
		}
		loc := d.LocationTable().At(int(li))
		var f Frame
		var err error
		if f.Attrs, err = attrs(loc.AttributeIndices()); err != nil {
			return f, err
		}
		if mi := loc.MappingIndex(); mi != 0 {
			if mi < 0 || int(mi) >= d.MappingTable().Len() {
				return f, fmt.Errorf("otlptest: mapping %d of %d", mi, d.MappingTable().Len())
			}
			m := d.MappingTable().At(int(mi))
			if f.Mapping, err = str(m.FilenameStrindex()); err != nil {
				return f, err
			}
			f.Start = m.MemoryStart()
			if f.MapAttrs, err = attrs(m.AttributeIndices()); err != nil {
				return f, err
			}
		}
		if loc.Lines().Len() != 1 {
			return f, fmt.Errorf("otlptest: location %d has %d lines", li, loc.Lines().Len())
		}
		ln := loc.Lines().At(0)
		fi := ln.FunctionIndex()
		if fi <= 0 || int(fi) >= d.FunctionTable().Len() {
			return f, fmt.Errorf("otlptest: function %d of %d", fi, d.FunctionTable().Len())
		}
		fn := d.FunctionTable().At(int(fi))
		if f.Name, err = str(fn.NameStrindex()); err != nil {
			return f, err
		}
		if f.File, err = str(fn.FilenameStrindex()); err != nil {
			return f, err
		}
		f.Line = ln.Line()
		return f, nil
	}
	var out []Sample
	for _, rp := range pd.ResourceProfiles().All() {
		res := map[string]any{}
		for k, v := range rp.Resource().Attributes().All() {
			res[k] = value(v)
		}
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				st, err := valueType(str, p.SampleType())
				if err != nil {
					return nil, err
				}
				pt, err := valueType(str, p.PeriodType())
				if err != nil {
					return nil, err
				}
				for _, s := range p.Samples().All() {
					smp := Sample{Resource: res, Scope: sp.Scope().Name(), SampleType: st, PeriodType: pt, Period: p.Period(),
						Time: uint64(p.Time()), Duration: p.DurationNano(), ProfileID: p.ProfileID(),
						Values: s.Values().AsRaw(), Times: s.TimestampsUnixNano().AsRaw()}
					// Values, times, or as many of each.
					if len(smp.Values) == 0 && len(smp.Times) == 0 || len(smp.Times) > 0 && len(smp.Values) > 0 && len(smp.Values) != len(smp.Times) {
						return nil, fmt.Errorf("otlptest: a sample has %d values and %d timestamps", len(smp.Values), len(smp.Times))
					}
					for _, t := range smp.Times {
						if t < smp.Time || t >= smp.Time+smp.Duration {
							return nil, fmt.Errorf("otlptest: a sample at %d, outside its profile's [%d, %d)", t, smp.Time, smp.Time+smp.Duration)
						}
					}
					if smp.Attrs, err = attrs(s.AttributeIndices()); err != nil {
						return nil, err
					}
					si := s.StackIndex()
					if si < 0 || int(si) >= d.StackTable().Len() {
						return nil, fmt.Errorf("otlptest: stack %d of %d", si, d.StackTable().Len())
					}
					for _, li := range d.StackTable().At(int(si)).LocationIndices().All() {
						f, err := frame(li)
						if err != nil {
							return nil, err
						}
						smp.Stack = append(smp.Stack, f)
					}
					out = append(out, smp)
				}
			}
		}
	}
	return out, nil
}

func valueType(str func(int32) (string, error), vt pprofile.ValueType) (string, error) {
	t, err := str(vt.TypeStrindex())
	if err != nil {
		return "", err
	}
	u, err := str(vt.UnitStrindex())
	return t + "/" + u, err
}

func value(v pcommon.Value) any {
	if v.Type() == pcommon.ValueTypeInt {
		return v.Int()
	}
	return v.AsString()
}
