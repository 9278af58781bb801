package perfevent

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseCallGraph parses the value of perf record's --call-graph: fp
// (frame pointers: userStack 0), or dwarf with an optional size of the
// user stack to copy (dwarf,SIZE: rounded up to a multiple of 8, at most
// 65528; 8192 by default).
func ParseCallGraph(s string) (userStack uint32, err error) {
	mode, size, sized := strings.Cut(s, ",")
	switch mode {
	case "fp":
		return 0, nil
	case "dwarf":
	default:
		return 0, fmt.Errorf("%q: want fp or dwarf[,SIZE] (lbr is not supported)", s)
	}
	if !sized {
		return DefaultUserStack, nil
	}
	n, err := strconv.ParseUint(size, 0, 32)
	n = (n + 7) &^ 7
	if err != nil || n == 0 || n > MaxUserStack {
		return 0, fmt.Errorf("%q: the stack dump size must be from 8 to %d bytes", s, MaxUserStack)
	}
	return uint32(n), nil
}
