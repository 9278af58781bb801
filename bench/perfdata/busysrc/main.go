// Command busysrc prints the C source of the test workload shared by the
// tests (internal/perftest) and the benchmarks, so both measure one program.
package main

import (
	"fmt"

	"github.com/jitprof/jitprof/internal/perftest"
)

func main() { fmt.Print(perftest.BusySource) }
