// Command src prints the C source of the DWARF call-graph workload shared
// by the tests (internal/perftest) and bench/unwind, so both measure one
// program.
package main

import (
	"fmt"

	"github.com/jitprof/jitprof/internal/perftest"
)

func main() { fmt.Print(perftest.DWARFSource) }
