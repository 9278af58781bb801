package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// Size is a flag of a size in bytes, written as a number with an
// optional binary unit: 512, 64K, 256M, 1G (KiB, MiB and GiB spelt so
// are taken too).
type Size int64

func (s *Size) String() string { return FormatSize(int64(*s)) }

func (s *Size) Set(v string) error {
	num := strings.TrimSuffix(strings.TrimSuffix(v, "B"), "i")
	shift := 0
	if n := len(num); n > 0 {
		switch num[n-1] {
		case 'k', 'K':
			shift = 10
		case 'm', 'M':
			shift = 20
		case 'g', 'G':
			shift = 30
		case 't', 'T':
			shift = 40
		}
		if shift > 0 {
			num = num[:n-1]
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > 1<<(62-shift) {
		return fmt.Errorf("%q is not a size (a positive number of bytes, or with K, M, G or T)", v)
	}
	*s = Size(n << shift)
	return nil
}

// FormatSize writes n in the largest binary unit that divides it.
func FormatSize(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "T"}, {30, "G"}, {20, "M"}, {10, "K"}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}
