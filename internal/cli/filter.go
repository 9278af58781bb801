package cli

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/jitprof/jitprof/internal/linux"
	"github.com/jitprof/jitprof/internal/report"
)

// FilterFlags are perf report's sample filters, spelled as perf's:
// --comms, --pid, --tid, --dsos and --cpu.
type FilterFlags struct {
	comms, pids, tids, dsos, cpus string
}

// Register defines the filter flags on fs.
func (ff *FilterFlags) Register(fs *flag.FlagSet) {
	for _, name := range []string{"comms", "comm", "c"} {
		fs.StringVar(&ff.comms, name, "", "only the samples of these `commands` (comma-separated); --comms, --comm and -c are one")
	}
	fs.StringVar(&ff.pids, "pid", "", "only the samples of these `pids` (comma-separated)")
	fs.StringVar(&ff.tids, "tid", "", "only the samples of these `tids` (comma-separated)")
	for _, name := range []string{"dsos", "dso", "d"} {
		fs.StringVar(&ff.dsos, name, "", "only the samples whose leaf is in these `images` (paths or base names, comma-separated); --dsos, --dso and -d are one")
	}
	for _, name := range []string{"cpu", "C"} {
		fs.StringVar(&ff.cpus, name, "", "only the samples of these `cpus` (e.g. 0-3,5), percentages of theirs as perf's; --cpu and -C are one")
	}
}

// Parse returns the filter the flags ask for.
func (ff *FilterFlags) Parse() (report.Filter, error) {
	return parseFilter(ff.comms, ff.pids, ff.tids, ff.dsos, ff.cpus)
}

// parseFilter makes the filter of the flags' values.
func parseFilter(comms, pids, tids, dsos, cpus string) (report.Filter, error) {
	var f report.Filter
	list := func(s string) []string {
		var l []string
		for _, x := range strings.Split(s, ",") {
			if x = strings.TrimSpace(x); x != "" {
				l = append(l, x)
			}
		}
		return l
	}
	f.Comms, f.DSOs = list(comms), list(dsos)
	for _, x := range []struct {
		s   string
		dst *[]uint32
	}{{pids, &f.PIDs}, {tids, &f.TIDs}} {
		for _, id := range list(x.s) {
			n, err := strconv.ParseUint(id, 10, 32) // 0 too: the idle task
			if err != nil {
				return f, fmt.Errorf("bad id %q in %q", id, x.s)
			}
			*x.dst = append(*x.dst, uint32(n))
		}
	}
	if cpus != "" {
		var err error
		if f.CPUs, err = linux.ParseCPUList(cpus); err != nil {
			return f, err
		}
	}
	return f, nil
}
