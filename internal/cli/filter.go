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

// Register defines the filter flags on fs, spelled as perf report's:
// -c for --comms, -d for --dsos, -C for --cpu.
func (ff *FilterFlags) Register(fs *flag.FlagSet) {
	ff.register(fs, []string{"comms", "comm", "c"}, []string{"cpu", "C"})
}

// RegisterDiff defines the filter flags on fs, spelled as perf diff's,
// whose -c is the computation: -C for --comms, -d for --dsos, --cpu.
func (ff *FilterFlags) RegisterDiff(fs *flag.FlagSet) {
	ff.register(fs, []string{"comms", "comm", "C"}, []string{"cpu"})
}

// RegisterTop defines the filter flags on fs that perf top has:
// --comms and --dsos (its -c, -C, -d, -p and -t are other options, and
// --pid, --tid and --cpu choose what it samples).
func (ff *FilterFlags) RegisterTop(fs *flag.FlagSet) {
	for _, name := range []string{"comms", "comm"} {
		fs.StringVar(&ff.comms, name, "", "only the samples of these `commands` (comma-separated); --comms and --comm are one")
	}
	for _, name := range []string{"dsos", "dso"} {
		fs.StringVar(&ff.dsos, name, "", "only the samples whose leaf is in these `images` (paths or base names, comma-separated); --dsos and --dso are one")
	}
}

func (ff *FilterFlags) register(fs *flag.FlagSet, comms, cpus []string) {
	for _, name := range comms {
		fs.StringVar(&ff.comms, name, "", "only the samples of these `commands` (comma-separated); "+spellings(comms)+" are one")
	}
	fs.StringVar(&ff.pids, "pid", "", "only the samples of these `pids` (comma-separated)")
	fs.StringVar(&ff.tids, "tid", "", "only the samples of these `tids` (comma-separated)")
	dsos := []string{"dsos", "dso", "d"}
	for _, name := range dsos {
		fs.StringVar(&ff.dsos, name, "", "only the samples whose leaf is in these `images` (paths or base names, comma-separated); "+spellings(dsos)+" are one")
	}
	for _, name := range cpus {
		usage := "only the samples of these `cpus` (e.g. 0-3,5), percentages of theirs as perf's"
		if len(cpus) > 1 {
			usage += "; " + spellings(cpus) + " are one"
		}
		fs.StringVar(&ff.cpus, name, "", usage)
	}
}

// spellings lists an option's names as users type them: "--comms,
// --comm and -c".
func spellings(names []string) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = "--" + n
		if len(n) == 1 {
			s[i] = "-" + n
		}
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
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
