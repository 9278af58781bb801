package cli

import "testing"

// TestSize: sizes read with and without units, and are written back
// as they read.
func TestSize(t *testing.T) {
	for in, want := range map[string]int64{
		"512": 512, "64K": 64 << 10, "256M": 256 << 20, "256MiB": 256 << 20, "1G": 1 << 30, "2g": 2 << 30, "1TB": 1 << 40,
	} {
		var s Size
		if err := s.Set(in); err != nil || int64(s) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, s, err, want)
			continue
		}
		var back Size
		if err := back.Set(s.String()); err != nil || back != s {
			t.Errorf("%q written as %q reads %d, %v", in, s.String(), back, err)
		}
	}
	for _, in := range []string{"", "M", "-1", "0", "1.5G", "10X", "99999999999T"} {
		var s Size
		if err := s.Set(in); err == nil {
			t.Errorf("Set(%q) = %d, want an error", in, s)
		}
	}
}
