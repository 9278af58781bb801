package perfdata

import "testing"

// TestRecordLayouts checks the table against itself: every part dump
// shows names a field of its layout (AppendFields panics otherwise),
// and every kernel record type the package has a struct for has a
// layout.
func TestRecordLayouts(t *testing.T) {
	for typ, l := range recLayouts {
		if l == nil {
			continue
		}
		for _, s := range l.show {
			if s.field == "" {
				continue
			}
			found := false
			for _, f := range l.fields {
				found = found || f.name == s.field
			}
			if !found {
				t.Errorf("%v: dump shows %q, which is not a field", RecordType(typ), s.field)
			}
		}
	}
	var r Reader
	for typ := RecordMmap; typ <= RecordAuxOutputHWID; typ++ {
		if typ == RecordSample {
			continue
		}
		if _, unknown := r.recordFor(typ).(*Unknown); unknown || recLayouts[typ] == nil {
			t.Errorf("%v: no struct or no layout", typ)
		}
	}
}
